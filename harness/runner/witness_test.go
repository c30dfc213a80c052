package runner_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// rmidKept is the optimized model with one bug that no step of its own
// shows: an IPC_RMID says ok and removes nothing, so the object stays in
// the final state (and in any later listing).
type rmidKept struct{ ops.Model }

func (m rmidKept) Apply(op ops.Op) (ops.Result, error) {
	if op.Kind == ops.KindRmid {
		return ops.Result{}, nil
	}
	return m.Model.Apply(op)
}

// A divergence that only the final state shows is stored with a witness
// step appended, and a divergence at a call that only meets a difference
// an earlier call left in the state is that earlier call's cause: an observation whose result differs between the sides,
// so that the finding (and its C reproducer, which checks steps) tells
// them apart, and its cause is the call before the observation.
func TestFinalDivergenceGetsAWitnessStep(t *testing.T) {
	mutant := openMutant(t, "rmid-kept", func(m ops.Model) ops.Model { return rmidKept{m} })
	p, err := runner.NewPair(context.Background(), open(t, "optimized", false).side, mutant, "ids", equiv.Exact)
	require.NoError(t, err)
	res, _ := keepGoing(t, p, runner.Options{Checks: 200, Batch: 32})
	require.Zero(t, res.Failures)
	witnessed := 0
	for _, f := range res.Findings {
		text, err := os.ReadFile(f.Script)
		require.NoError(t, err)
		if !strings.Contains(string(text), "# note: witness: step") {
			continue
		}
		witnessed++
		fd, err := corpus.ParseFinding(f.Script, string(text))
		require.NoError(t, err)
		require.NoError(t, fd.FillFromTable(string(text)))
		steps := fd.Script.Ops()
		last := steps[len(steps)-1]
		require.True(t, ops.Observes(last), "%s: the witness %s observes", f.Signature, ops.FormatOp(last))
		a, err := fd.Expected("A")
		require.NoError(t, err)
		bres, err := fd.Expected("B")
		require.NoError(t, err)
		require.NotEqual(t, ops.FormatResult(last, a[len(a)-1]), ops.FormatResult(last, bres[len(bres)-1]),
			"%s: the sides' results differ at the witness step", f.Signature)
		require.Equal(t, len(steps), f.Ops, "the reported length counts the witness")
		require.True(t, strings.HasPrefix(f.Cause, "ids: "), f.Cause)
		require.NotContains(t, f.Cause, "list", "the cause is the call before the observation")
	}
	require.Positive(t, witnessed, "some finding of the final state was given a witness step: %+v", res.Findings)
	// Every finding, wherever the kept object showed (a later get that
	// finds it, a full table, a listing, a stat), is one cause: the rmid
	// after which the states differ.
	require.Len(t, res.Causes, 1, "%+v", res.Causes)
	require.Equal(t, "ids: rmid", res.Causes[0].Key)
	t.Logf("%d of %d findings witnessed; causes %+v", witnessed, len(res.Findings), res.Causes)
}
