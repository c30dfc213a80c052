package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// Each deliberate message-queue bug is found against the optimized model
// and shrunk to a few operations.
func TestMsgMutantsAreFoundAndShrunk(t *testing.T) {
	t.Parallel()
	mutant := testProgram(t, "./testdata/msgmutant")
	for _, m := range []string{"fits", "lifo", "e2big", "text", "noerror", "idfirst"} {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=" + m}, "compare", mutant, "optimized", "--subsystem", "msg", "--checks", "1000", "--seed", "1", "--json", "--corpus", dir)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 1, s["divergences"])
			sc, err := corpus.Read(s["scripts"].([]any)[0].(string))
			require.NoError(t, err)
			require.LessOrEqual(t, len(sc.Steps), 8)
			if m == "idfirst" { // issue 21: shrunk to at most 3 operations
				require.LessOrEqual(t, len(sc.Steps), 3)
			}
		})
	}
}

// A received text that is wrong but of the right length is seen by exact
// equality, within 100 checks, at the msgrcv itself.
func TestWrongReceivedTextIsFoundAtTheMsgrcv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mutant := testProgram(t, "./testdata/msgmutant")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=text"}, "compare", mutant, "optimized", "--subsystem", "msg", "--checks", "100", "--seed", "3", "--equiv", "exact", "--json", "--corpus", dir)
	require.Equal(t, 1, r.code, r.stderr)
	s := summary(t, r)
	require.EqualValues(t, 1, s["divergences"])
	text, err := os.ReadFile(s["scripts"].([]any)[0].(string))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^# note: step \d+: msgrcv msg `, string(text), "the report points at the msgrcv step")
}

// The same seed gives the same verdict and the same statistics, even
// against the kernel, where which woken sender gets in first is up to the
// scheduler: the model follows, and the statistics stop at the first race.
func TestMsgStatsAreDeterministic(t *testing.T) {
	t.Parallel()
	needKernel(t)
	run := func() map[string]any {
		r := ipcfuzz(t, "compare", "optimized", "kernel", "--subsystem", "msg", "--checks", "150", "--seed", "7", "--stats", "--json", "--corpus", t.TempDir())
		require.Equal(t, 0, r.code, r.stderr)
		s := summary(t, r)
		delete(s, "seconds")
		delete(s, "ops_per_sec")
		measured := 0
		for _, k := range s["timing"].([]any) {
			k := k.(map[string]any)
			require.EqualValues(t, 0, k["median_syscall_ns_a"], "a model makes no system calls")
			if k["median_syscall_ns_b"].(float64) > 0 {
				measured++
			}
		}
		require.Positive(t, measured, "no kind's system calls measured on the kernel")
		delete(s, "timing") // a measurement, like seconds
		sides := s["sides"].([]any)
		require.Len(t, sides, 2)
		kernel := sides[1].(map[string]any)
		require.Equal(t, "kernel", kernel["side"])
		require.Equal(t, s["ops"], kernel["ops"], "every op of the kernel side observed")
		if kernel["syscalls_counted"] == true {
			require.Greater(t, kernel["syscalls"], kernel["ops"], "a task's op is a round trip of several calls")
		}
		require.Equal(t, false, sides[0].(map[string]any)["syscalls_counted"], "a model makes no system calls")
		require.Positive(t, kernel["syscall_ns"], "the kernel's work in its system calls")
		require.Less(t, kernel["syscall_ns"], kernel["inside_ns"], "the system calls of the ops within the ops' time")
		require.EqualValues(t, 0, sides[0].(map[string]any)["syscall_ns"], "a model makes no system calls")
		delete(s, "sides") // measurements too
		return s
	}
	first := run()
	require.NotNil(t, first["stats"])
	require.Equal(t, first, run())
}
