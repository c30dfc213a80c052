package runner_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// A divergence of two address spaces names what differs in them, so that
// one kernel merging where the other splits and one labelling [heap] where
// the other does not are two findings; an errno divergence keeps its
// classes.
func TestSignatureNamesWhatDiffersInALayout(t *testing.T) {
	var script []ops.Op
	for _, line := range []string{"map h:0+1 r--", "layout"} {
		op, err := ops.ParseOp(line)
		require.NoError(t, err)
		script = append(script, op)
	}
	state := func(line string) ops.VMAState {
		s, err := ops.ParseVMAState("brk=0\n" + line + "\n")
		require.NoError(t, err)
		return s
	}
	plain, labelled := state("h:0-1 r--p anon mr,mw,me"), state("h:0-1 r--p anon [heap] mr,mw,me")
	out := func(s ops.VMAState) ops.Outcome {
		return ops.Outcome{Results: []ops.Result{{}, {Layout: s}}, Snapshot: ops.Snapshot{VMA: s}}
	}
	pair := [2]ops.Outcome{out(plain), out(labelled)}
	d := equiv.Compare(equiv.Exact, script, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "vma/layout/ok-ok/heap-label", runner.Signature("vma", script, pair, d))

	final := script[:1]
	pair[0].Results, pair[1].Results = pair[0].Results[:1], pair[1].Results[:1]
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "vma/final/vma/heap-label", runner.Signature("vma", final, pair, d))

	pair[1].Results = []ops.Result{{Err: ops.ENOMEM}}
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.Equal(t, "vma/map/ok-ENOMEM", runner.Signature("vma", final, pair, d))
}
