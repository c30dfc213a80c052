package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

// Where the sides first differ at a race the judge allows (which blocked
// sender a receive let in) and one of them later leaves what the judge
// allows, the divergence reported is the later one, where the sides'
// results differ too: the misbehaviour, not the race. With both ways
// allowed there is none; where the judge's step shows no difference
// between the sides, or under ids-renamed, the first difference stands.
func TestJudgedDivergence(t *testing.T) {
	script := opstest.Lines(t, "h1 = get msg key=0x0 mode=0600",
		"msgsnd msg h1 type=1 size=1 fill=0 task=t1",
		"msgrcv msg h1 size=1 type=0 nowait",
		"msgrcv msg h1 size=0 type=-3 nowait")
	out := func(race uint8, last ops.Errno) ops.Outcome {
		r := make([]ops.Result, len(script))
		r[2].Done = []ops.Completion{{Task: race}}
		r[3].Err = last
		return ops.Outcome{Results: r}
	}
	v := Verdict{Out: [2]ops.Outcome{out(1, ops.E2BIG), out(2, ops.ENOMSG)}}
	v.Div = equiv.Compare(equiv.Exact, script, v.Out[0], v.Out[1])
	require.Equal(t, 2, v.Div.Step)

	require.Nil(t, judgedDivergence(equiv.Exact, script, v, nil), "both ways allowed")
	d := judgedDivergence(equiv.Exact, script, v, &equiv.Divergence{Step: 3, Reason: "judge"})
	require.Equal(t, 3, d.Step)
	require.Contains(t, d.Reason, "A -> E2BIG, B -> ENOMSG")
	require.Contains(t, d.Reason, "race the judge allows")
	require.Equal(t, "msg/msgrcv/E2BIG-ENOMSG", Signature("msg", script, v.Out, d))

	require.Same(t, v.Div, judgedDivergence(equiv.IDsRenamed, script, v, &equiv.Divergence{Step: 3}))
	require.Same(t, v.Div, judgedDivergence(equiv.Exact, script, v, &equiv.Divergence{Step: -1}))
	same := v
	same.Out[1] = out(2, ops.E2BIG)
	require.Same(t, same.Div, judgedDivergence(equiv.Exact, script, same, &equiv.Divergence{Step: 3}), "no difference at the judge's step")
}
