package runner_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Given hands a run its scripts in order, whatever the run's batches.
func TestGiven(t *testing.T) {
	scripts := [][]ops.Op{{{Kind: ops.KindGet}}, {{Kind: ops.KindStat}}, {}}
	gen := runner.Given(scripts)
	for i := range scripts {
		require.Equal(t, scripts[i], gen(runner.ScriptSeed(0, i)))
	}
}

// A chain's total adds the counts and lists, and takes the last run's
// kernel when it has one.
func TestResultAdd(t *testing.T) {
	total := runner.NewResult(&runner.Pair{A: runner.Side{Name: "a"}, B: runner.Side{Name: "c"}, Subsystem: "ids"}, 0, "")
	require.NotNil(t, total.Findings)
	total.Add(&runner.Result{Checks: 2, Divergences: 1, Scripts: []string{"x.ops"}, Kernel: "6.1", Engine: "fuzz", Relation: "exact"})
	total.Add(&runner.Result{Checks: 2, Interrupted: true})
	require.Equal(t, 4, total.Checks)
	require.Equal(t, 1, total.Divergences)
	require.Equal(t, []string{"x.ops"}, total.Scripts)
	require.Equal(t, "6.1", total.Kernel)
	require.True(t, total.Interrupted)
	require.Equal(t, "a", total.A)
	require.Equal(t, "c", total.B)
}
