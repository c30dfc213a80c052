package vma_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// runScript runs script's operations (one per line, vocabulary text, the
// last a layout) on the naive and the optimized model as compare runs them,
// handed the quirks q as a kernel side reports them; it checks they agree
// and returns each result as text.
func runScript(t *testing.T, q ops.VMAQuirks, script string) []string {
	t.Helper()
	var out [2][]string
	for i, name := range []string{"naive", "optimized"} {
		b, err := impls.Lookup(name)
		require.NoError(t, err)
		m, _, err := b.Start()
		require.NoError(t, err)
		require.NoError(t, m.Reset(ops.Config{Facts: ops.Facts{}.With(ops.FactVMAQuirks, int64(q))}))
		for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
			op, err := ops.ParseOp(line)
			require.NoError(t, err, line)
			r, err := m.Apply(op)
			require.NoError(t, err, line)
			out[i] = append(out[i], ops.FormatResult(op, r))
		}
	}
	require.Equal(t, out[0], out[1], "naive and optimized")
	return out[0]
}

// MREMAP_DONTUNMAP as each kernel version does it: the layouts are those
// Linux 6.18.44 (this machine), Debian's 6.12.118 and 6.1.192 showed for
// the same calls (soft-dirty left out), each model run with the quirks of
// that version.
func TestDontUnmapFollowsEachVersion(t *testing.T) {
	const beside = `map w:30+2 rw-
map w:34+2 rw-
remap w:30+2 new=2 fixed to=32 dontunmap
layout`
	const lockedPart = `map w:0+6 rw-
lock w:0+6
remap w:2+2 new=2 fixed to=20 dontunmap
layout`
	const pgoff = `map w:2+2 rw-
touch w:2 write
remap w:2+2 new=2 fixed to=10
remap w:10+2 new=2 fixed to=20 dontunmap
map w:8+2 rw-
layout`
	const leak = `memlock 8
map w:0+6 rw-
lock w:0+6
remap w:2+2 new=2 fixed to=20 dontunmap
unmap w:0+64
map w:30+6 rw- locked`
	rw, lo := "rw-p anon mr,mw,me,ac", "rw-p anon mr,mw,me,lo,ac"
	for _, c := range []struct {
		version              string
		beside, locked, pgof string
		leak                 string
	}{
		{"6.18", "[w:30-36 " + rw + "] brk=0",
			"[w:0-6 " + rw + " | w:20-22 " + lo + "] brk=0",
			"[w:8-10 " + rw + " | w:10-12 " + rw + " | w:20-22 " + rw + "] brk=0", "EAGAIN"},
		{"6.12", "[w:30-32 " + rw + " | w:32-36 " + rw + "] brk=0",
			"[w:0-2 " + lo + " | w:2-4 " + rw + " | w:4-6 " + lo + " | w:20-22 " + lo + "] brk=0",
			"[w:8-12 " + rw + " | w:20-22 " + rw + "] brk=0", "ok"},
		{"6.1", "[w:30-32 " + rw + " | w:32-34 " + rw + " | w:34-36 " + rw + "] brk=0",
			"[w:0-2 " + lo + " | w:2-4 " + rw + " | w:4-6 " + lo + " | w:20-22 " + lo + "] brk=0",
			"[w:8-12 " + rw + " | w:20-22 " + rw + "] brk=0", "ok"},
	} {
		t.Run(c.version, func(t *testing.T) {
			q, ok := ops.VMAQuirksOf(c.version)
			require.True(t, ok)
			last := func(script string) string { r := runScript(t, q, script); return r[len(r)-1] }
			require.Equal(t, c.beside, last(beside), "an unfaulted source moved beside itself")
			require.Equal(t, c.locked, last(lockedPart), "the middle of a locked VMA")
			require.Equal(t, c.pgof, last(pgoff), "a whole source's pgoff")
			require.Equal(t, c.leak, last(leak), "a locked map within the limit after everything is unmapped")
		})
	}
}
