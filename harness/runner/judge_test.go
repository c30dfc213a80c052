package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Where neither side follows on a subsystem that races (a kernel against a
// kernel), a divergence goes before the judge: a race when the judge,
// following each side's way, agrees with both; a divergence when it does
// not.
func TestJudgeTellsRacesFromDivergences(t *testing.T) {
	sc := opstest.Script(t, "subsystem msg\nh1 = get msg key=0x0 mode=0600\n")
	script := sc.Ops()
	a := open(t, "naive", false).side
	eperm := runner.Side{Name: "eperm", Impl: ops.NewLocal(ops.Info{Name: "eperm"}, copycat{})}
	lenient := &runner.Side{Name: "copycat", Impl: ops.NewLocal(ops.Info{Name: "copycat", Follows: true}, copycat{}), Info: ops.Info{Name: "copycat", Follows: true}}
	strict := open(t, "optimized", false).side
	strict.Info.Follows = true
	for _, c := range []struct {
		judge    *runner.Side
		diverges bool
	}{{nil, true}, {lenient, false}, {&strict, true}} {
		p := &runner.Pair{A: a, B: eperm, Subsystem: "msg", Relation: equiv.Exact, Judge: c.judge}
		v, err := p.CheckOne(context.Background(), script)
		require.NoError(t, err)
		require.Equal(t, c.diverges, v.Diverged(), "judge %v", c.judge)
	}
	// Not on a subsystem that does not race.
	p := &runner.Pair{A: a, B: eperm, Subsystem: "ids", Relation: equiv.Exact, Judge: lenient}
	v, err := p.CheckOne(context.Background(), script)
	require.NoError(t, err)
	require.True(t, v.Diverged())
}
