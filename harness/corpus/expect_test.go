package corpus_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

const expectFinding = `# ipcfuzz divergence
# format: 2
# command: ipcfuzz compare naive optimized --subsystem ids
# seed: 7
# script: 1 (script seed 3)
# side A: naive
# side B: optimized
# signature: ids/x
# stated: B
# A step 2 -> EACCES
subsystem ids
get msg key=0x0 mode=0600 -> id=0
stat msg id=-1 -> EINVAL
`

// A reproducer expects side A's or side B's results of a finding, or a
// script's stated ones, and its notes say where the file was found.
func TestExpect(t *testing.T) {
	f, err := corpus.ParseFinding("x.ops", expectFinding)
	require.NoError(t, err)
	a, err := f.Expect("x.ops", "a")
	require.NoError(t, err)
	require.Equal(t, []string{"id=0", "EACCES"}, a.Results)
	require.Equal(t, "side A of the finding, naive", a.From)
	require.Equal(t, []string{"From x.ops.", "found by: ipcfuzz compare naive optimized --subsystem ids", "signature: ids/x", "seed: 7 (script 1, script seed 3)"}, a.Notes)
	b, err := f.Expect("x.ops", "b")
	require.NoError(t, err)
	require.Equal(t, []string{"id=0", "EINVAL"}, b.Results)
	same, err := f.SameAtEveryStep()
	require.NoError(t, err)
	require.False(t, same)

	s, err := corpus.ParseFinding("s.ops", "subsystem ids\nstat msg id=-1 -> EINVAL\nstat msg id=-2\n")
	require.NoError(t, err)
	e, err := s.Expect("s.ops", "a")
	require.NoError(t, err)
	require.Equal(t, []string{"EINVAL", ""}, e.Results)
	require.Equal(t, "the results the script states", e.From)
	_, err = s.Expect("s.ops", "b")
	require.ErrorContains(t, err, "s.ops is a script, not a finding")
}
