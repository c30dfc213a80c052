package runner_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// The side channel end to end: through two plugin processes, each side
// sends an observation of every operation (its time inside the plugin),
// each side's own even where both sent the same results as the same
// bytes; observations that differ, or that one side did not send, never
// make a divergence; and a run with --stats reads each kind's median time
// from them. Msg's scripts race (B follows A, through Exec); ids' do not
// (the same-bytes path).
func TestObservationsTravelAndAreNeverCompared(t *testing.T) {
	for _, sub := range []string{"ids", "msg"} {
		t.Run(sub, func(t *testing.T) { observationsTravel(t, sub) })
	}
}

func observationsTravel(t *testing.T, sub string) {
	ctx := context.Background()
	s, err := props.Lookup(sub)
	require.NoError(t, err)
	gen := s.RapidScripts(equiv.Exact)
	var scripts [][]ops.Op
	for i := range 100 {
		scripts = append(scripts, gen(runner.ScriptSeed(11, i)))
	}
	p, ok := pairOf(t, open(t, "naive", true), open(t, "naive", true), sub, equiv.Exact)
	require.True(t, ok)

	p.A.Config.Observe = ops.Observing{Time: true}
	p.B.Config.Observe = ops.Observing{Time: true}
	vs, err := p.Check(ctx, scripts)
	require.NoError(t, err)
	same := 0
	for i, v := range vs {
		require.False(t, v.Diverged(), "script %d: %v", i, v.Div)
		for side := range 2 {
			require.Len(t, v.Out[side].Observed, len(scripts[i]), "script %d, side %d", i, side)
		}
		if v.Same && len(scripts[i]) > 0 {
			same++
			require.NotSame(t, &v.Out[0].Observed[0], &v.Out[1].Observed[0], "script %d: B was given A's observations", i)
		}
		// Whatever the observations, the outcomes agree.
		changed := v.Out[1]
		changed.Observed = make([]ops.Observation, len(changed.Observed))
		for j := range changed.Observed {
			changed.Observed[j] = ops.Observation{Nanos: v.Out[1].Observed[j].Nanos + 12345, PCs: []uint64{0xffffffff81000000 + uint64(j)}}
		}
		for _, rel := range equiv.Relations {
			require.Nil(t, equiv.Compare(rel, scripts[i], v.Out[0], changed), "script %d, %s", i, rel)
		}
	}
	if !p.A.Follows && !p.B.Follows {
		require.NotZero(t, same, "no outcome took the same-bytes path")
	}

	// One side observing and the other not is no divergence either.
	p.B.Config.Observe = ops.Observing{}
	vs, err = p.Check(ctx, scripts)
	require.NoError(t, err)
	for i, v := range vs {
		require.False(t, v.Diverged(), "script %d: %v", i, v.Div)
		require.Len(t, v.Out[0].Observed, len(scripts[i]))
		require.Nil(t, v.Out[1].Observed, "script %d: observations nobody asked for", i)
	}

	res, err := runner.Run(ctx, runner.Options{
		Pairs: []*runner.Pair{p}, Source: runner.Seeded(gen), Seed: 11, Checks: 100,
		Observe: ops.Observing{Time: true},
	})
	require.NoError(t, err)
	require.Zero(t, res.Divergences)
	require.NotEmpty(t, res.Timing)
	total := 0
	for _, k := range res.Timing {
		require.NotEmpty(t, k.Kind)
		total += k.Ops
	}
	require.Equal(t, res.Ops, total, "every operation's time is counted once, under its kind")

	// Where each side's time went: its operations of t0 and of tasks, and
	// its calls, which hold every operation's time inside and more.
	taskOps := 0
	for _, s := range scripts {
		for _, op := range s {
			if op.Task != 0 {
				taskOps++
			}
		}
	}
	require.Len(t, res.Sides, 2)
	for _, side := range res.Sides {
		require.Equal(t, res.Ops, side.Ops, side.Side)
		require.Equal(t, taskOps, side.TaskOps, side.Side)
		require.LessOrEqual(t, side.TaskNanos, side.InsideNanos, side.Side)
		require.Positive(t, side.Calls, side.Side)
		require.GreaterOrEqual(t, side.CallNanos, side.InsideNanos, "%s: its calls took less than the operations inside them", side.Side)
		// Both sides are plugins, which say how long each call took
		// inside them: more than its operations, less than the call.
		require.GreaterOrEqual(t, side.ServerNanos, side.InsideNanos, "%s: its calls took less inside the plugin than its operations", side.Side)
		require.LessOrEqual(t, side.ServerNanos, side.CallNanos, "%s: its calls took longer inside the plugin than around them", side.Side)
		if taskOps > 0 {
			require.Positive(t, side.TaskMedianNanos, side.Side)
		}
	}
	require.Len(t, res.SideLines(), 4)
	require.Contains(t, res.SideLines()[1], "transport")
	require.Contains(t, res.ThroughputLine(), "checks/s")
}

// recording is a Learner that draws the seeded scripts and records what
// it is told.
type recording struct {
	runner.Seeded
	mu   sync.Mutex
	told [][]ops.Op
	seen int // observations fed back
}

func (r *recording) Feedback(script []ops.Op, outs [2]ops.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told = append(r.told, script)
	r.seen += len(outs[0].Observed) + len(outs[1].Observed)
}

// A Source that takes feedback is told, in script order, what every
// compared script did on both sides, observations included; its findings
// record no script seed (the seed alone does not draw its script).
func TestLearnerIsToldEveryScriptInOrder(t *testing.T) {
	s, err := props.Lookup("ids")
	require.NoError(t, err)
	gen := s.RapidScripts(equiv.Exact)
	p, ok := pairOf(t, open(t, "naive", false), open(t, "optimized", false), "ids", equiv.Exact)
	require.True(t, ok)
	src := &recording{Seeded: gen}
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs: []*runner.Pair{p}, Source: src, Seed: 5, Checks: 120, Batch: 16,
		Observe: ops.Observing{Time: true},
	})
	require.NoError(t, err)
	require.Equal(t, 120, res.Checks)
	require.Len(t, src.told, 120)
	for i, sc := range src.told {
		require.Equal(t, gen(runner.ScriptSeed(5, i)), sc, "script %d out of order", i)
	}
	require.Equal(t, 2*res.Ops, src.seen)
}
