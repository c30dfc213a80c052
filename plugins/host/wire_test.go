package host

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// ExecPacked and Decode are Exec in two steps: the same outcomes.
func TestExecPackedDecodesAsExec(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	scripts := toyScripts(11, 20, 9)
	want, err := p.Exec(ctx, ops.Config{}, scripts, nil)
	require.NoError(t, err)
	lens := make([]int, len(scripts))
	for i, s := range scripts {
		lens[i] = len(s)
	}
	raw, err := p.ExecPacked(ctx, ops.Config{}, p.PackScripts(scripts), lens)
	require.NoError(t, err)
	require.Len(t, raw, len(scripts))
	got := make([]ops.Outcome, len(raw))
	for i, r := range raw {
		got[i], err = p.Decode(r, i, lens[i])
		require.NoError(t, err)
	}
	requireSameOutcomes(t, want, got)
	require.Equal(t, plugins.LayoutVersion(), p.Layout())
}

// Two sides that send the same wrong bytes do not agree: the runner decodes
// what both sent once, and still finds it is garbage, for both sides.
func TestSameGarbageFromBothSidesIsAFailure(t *testing.T) {
	for _, mode := range []string{"shortexec", "badexecsnap"} {
		t.Run(mode, func(t *testing.T) {
			a, b := open(t, launch(t, mode)), open(t, launch(t, mode))
			p := &runner.Pair{A: runner.Side{Name: "a", Impl: a}, B: runner.Side{Name: "b", Impl: b}, Subsystem: "ids", Relation: equiv.Exact}
			res, err := runner.Run(context.Background(), runner.Options{
				Pairs: []*runner.Pair{p}, KeepGoing: true,
				Source: runner.Seeded(func(seed uint64) []ops.Op { return toyScripts(seed, 1, 6)[0] }),
				Checks: 4, Batch: 4,
			})
			require.NoError(t, err)
			require.Zero(t, res.Checks, "garbage counted as compared")
			require.Zero(t, res.Divergences)
			require.Equal(t, 8, res.Failures, "each side fails on each of the 4 scripts")
			require.NotEmpty(t, res.Findings)
			for _, f := range res.Findings {
				require.Contains(t, f.Signature, "garbage", "%+v", f)
			}
		})
	}
}
