package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A script longer than a chunk streams through state and replay: state
// states every result, replay agrees on them, and a wrong expectation in
// the middle is reported with the steps around it, not the whole table
// (which a script of more than runner.DefaultFullTable steps does not get).
func TestLongScriptsStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("subsystem ids\n")
	for i := 1; i <= 6000; i++ {
		fmt.Fprintf(&b, "h%d = get msg key=0x0 mode=0600\nrmid msg h%d\n", i, i)
	}
	long := writeFile(t, dir, "long.ops", b.String())

	r := ipcfuzz(t, "state", long, "--impl", "naive")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 12001)
	require.Equal(t, "subsystem ids", lines[0])
	require.Equal(t, "h1 = get msg key=0x0 mode=0600 -> id=0", lines[1])
	require.Equal(t, "rmid msg h6000 -> ok", lines[12000])
	stated := writeFile(t, dir, "stated.ops", r.stdout)

	r = ipcfuzz(t, "replay", stated, "--impls", "naive,optimized")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "ok    "+stated+" (12000 ops)")

	wrong := strings.Replace(lines[6001], "-> id=", "-> EEXIST # was ", 1)
	require.NotEqual(t, lines[6001], wrong)
	lines[6001] = strings.SplitN(wrong, " #", 2)[0]
	bad := writeFile(t, dir, "bad.ops", strings.Join(lines, "\n")+"\n")
	r = ipcfuzz(t, "replay", bad, "--impls", "naive,optimized")
	require.Equal(t, 1, r.code, r.stderr)
	require.Less(t, strings.Count(r.stdout, "\n"), 30, "the whole table is shown")
	require.Contains(t, r.stdout, "step 6001 (h3001 = get msg key=0x0 mode=0600): naive returned id=")
	require.Contains(t, r.stdout, "step 6001 (h3001 = get msg key=0x0 mode=0600): optimized returned id=")
	require.Contains(t, r.stdout, "(steps 1-5995 not shown)")
	require.Contains(t, r.stdout, "(steps 6007-12000 not shown)")
}

// state keeps a script's comments and blank lines where they were: a
// corpus script keeps its explanation when its results are stated again.
func TestStateKeepsComments(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "commented.ops")
	require.NoError(t, os.WriteFile(script, []byte(`# what this shows
# in two lines
subsystem ids

# Case: the first get
h1 = get msg key=0x0 mode=0600 -> EEXIST
rmid msg h1
# trailing
`), 0o644))
	r := ipcfuzz(t, "state", script, "--impl", "naive")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, `# what this shows
# in two lines
subsystem ids

# Case: the first get
h1 = get msg key=0x0 mode=0600 -> id=0
rmid msg h1 -> ok
# trailing
`, r.stdout)
}
