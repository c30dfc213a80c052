package vma

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// runScript runs script's operations (one per line, vocabulary text) on a
// new space of each composition with quirks q, checks they agree, and
// returns each operation's errno and the final layout.
func runScript(t *testing.T, q ops.VMAQuirks, script string) ([]ops.Errno, string) {
	t.Helper()
	var out [2]string
	var errnos [2][]ops.Errno
	for i, s := range []*Space{NewNaive(q), NewOptimized(q)} {
		for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
			op, err := ops.ParseOp(line)
			require.NoError(t, err, line)
			var e ops.Errno
			switch op.Kind {
			case ops.KindMap:
				e, err = s.Map(op.VMA)
			case ops.KindUnmap:
				e, err = s.Unmap(op.VMA)
			case ops.KindTouch:
				e, err = s.Touch(op.VMA)
			case ops.KindLock:
				e, err = s.Lock(op.VMA)
			case ops.KindRemap:
				e, err = s.Remap(op.VMA)
			case ops.KindMemlock:
				e, err = s.Memlock(op.VMA)
			default:
				t.Fatalf("runScript: %s", line)
			}
			require.NoError(t, err, line)
			errnos[i] = append(errnos[i], e)
		}
		st, err := s.State()
		require.NoError(t, err)
		var vmas []string
		for _, v := range st.VMAs {
			vmas = append(vmas, ops.FormatVMA(v))
		}
		out[i] = "[" + strings.Join(vmas, " | ") + "] brk=0"
	}
	require.Equal(t, out[0], out[1], "naive and optimized")
	require.Equal(t, errnos[0], errnos[1], "naive and optimized")
	return errnos[0], out[0]
}

// MREMAP_DONTUNMAP as each kernel version does it: the layouts are those
// Linux 6.18.44 (this machine), Debian's 6.12.118 and 6.1.192 showed for
// the same calls (soft-dirty left out), each model run with the quirks of
// that version.
func TestDontUnmapFollowsEachVersion(t *testing.T) {
	const beside = `map w:30+2 rw-
map w:34+2 rw-
remap w:30+2 new=2 fixed to=32 dontunmap`
	const lockedPart = `map w:0+6 rw-
lock w:0+6
remap w:2+2 new=2 fixed to=20 dontunmap`
	const pgoff = `map w:2+2 rw-
touch w:2 write
remap w:2+2 new=2 fixed to=10
remap w:10+2 new=2 fixed to=20 dontunmap
map w:8+2 rw-`
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
		leakErr              ops.Errno
	}{
		{"6.18", "[w:30-36 " + rw + "] brk=0",
			"[w:0-6 " + rw + " | w:20-22 " + lo + "] brk=0",
			"[w:8-10 " + rw + " | w:10-12 " + rw + " | w:20-22 " + rw + "] brk=0", ops.EAGAIN},
		{"6.12", "[w:30-32 " + rw + " | w:32-36 " + rw + "] brk=0",
			"[w:0-2 " + lo + " | w:2-4 " + rw + " | w:4-6 " + lo + " | w:20-22 " + lo + "] brk=0",
			"[w:8-12 " + rw + " | w:20-22 " + rw + "] brk=0", ops.OK},
		{"6.1", "[w:30-32 " + rw + " | w:32-34 " + rw + " | w:34-36 " + rw + "] brk=0",
			"[w:0-2 " + lo + " | w:2-4 " + rw + " | w:4-6 " + lo + " | w:20-22 " + lo + "] brk=0",
			"[w:8-12 " + rw + " | w:20-22 " + rw + "] brk=0", ops.OK},
	} {
		t.Run(c.version, func(t *testing.T) {
			q, ok := ops.VMAQuirksOf(c.version)
			require.True(t, ok)
			_, got := runScript(t, q, beside)
			require.Equal(t, c.beside, got, "an unfaulted source moved beside itself")
			_, got = runScript(t, q, lockedPart)
			require.Equal(t, c.locked, got, "the middle of a locked VMA")
			_, got = runScript(t, q, pgoff)
			require.Equal(t, c.pgof, got, "a whole source's pgoff")
			errs, _ := runScript(t, q, leak)
			require.Equal(t, c.leakErr, errs[len(errs)-1], "a locked map within the limit after everything is unmapped")
		})
	}
}
