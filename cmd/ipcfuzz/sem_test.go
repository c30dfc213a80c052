package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// Each deliberate semaphore bug is found against the optimized model and
// shrunk to a few operations (forkundo, a forked child that inherits its
// parent's undo list, nsundo, a namespace switch that keeps it, and nsshm,
// a setns that orphans the segments its task created, too);
// so is the counting rule of Linux 3.10-3.15
// (naive:ncnt=legacy).
func TestSemMutantsAreFoundAndShrunk(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"zerolast", "noclamp", "forkundo", "nsundo", "nsshm", "ncnt=legacy"} {
		sub := "sem"
		if m == "nsshm" {
			sub = "shm" // a shm bug of the namespace switch
		}
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			impl, env := "naive:"+m, []string(nil)
			if m != "ncnt=legacy" {
				impl, env = testProgram(t, "./testdata/semmutant"), []string{"IPCFUZZ_MUTATION=" + m}
			}
			r := ipcfuzzEnv(t, env, "compare", impl, "optimized", "--subsystem", sub, "--checks", "10000", "--seed", "1", "--json", "--corpus", dir)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 1, s["divergences"])
			sc, err := corpus.Read(s["scripts"].([]any)[0].(string))
			require.NoError(t, err)
			require.LessOrEqual(t, len(sc.Steps), 6, "not shrunk")
		})
	}
}

// replay and state refuse a script whose subsystem a plugin does not say
// it runs, rather than trusting whatever it answers.
func TestReplayRefusesAnUndeclaredSubsystem(t *testing.T) {
	t.Parallel()
	plugin := testProgram(t, "../../plugins/example/noseqbump")
	for _, args := range [][]string{
		{"replay", "../../corpus/ltp/ltp-semop05.ops", "--impls", "optimized," + plugin},
		{"state", "../../corpus/ltp/ltp-semop05.ops", "--impl", plugin},
	} {
		refused(t, "does not run subsystem sem (it runs ids)", args...)
	}
}
