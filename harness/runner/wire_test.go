package runner_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// countingWire is a plugin side that counts the outcomes it decodes.
type countingWire struct {
	ops.Wire
	decodes *atomic.Int64
}

func (c countingWire) Decode(w ops.WireOutcome, script, n int) (ops.Outcome, error) {
	c.decodes.Add(1)
	return c.Wire.Decode(w, script, n)
}

// Through plugins, an outcome both sides sent as the same bytes is decoded
// once and not compared again; the verdict is still the one of the same
// run in process, where every outcome is compared: the same checks, ops,
// divergences, findings (signature, first script, shrunk length, hits)
// and stats.
func TestWireRunGivesTheInProcessVerdict(t *testing.T) {
	for _, c := range []struct{ a, b, sub string }{
		{"naive:alloc=legacy", "optimized", "ids"},
		{"naive", "optimized", "shm"},
		{"naive", "optimized", "vma"},
	} {
		t.Run(c.a+"-"+c.b+"-"+c.sub, func(t *testing.T) {
			s, err := props.Lookup(c.sub)
			require.NoError(t, err)
			run := func(asPlugin bool, decodes *atomic.Int64) *runner.Result {
				p, ok := pairOf(t, open(t, c.a, asPlugin), open(t, c.b, asPlugin), c.sub, equiv.Exact)
				require.True(t, ok)
				if asPlugin {
					p.A.Impl = countingWire{p.A.Impl.(ops.Wire), decodes}
					p.B.Impl = countingWire{p.B.Impl.(ops.Wire), decodes}
				}
				res, err := runner.Run(context.Background(), runner.Options{
					Pairs: []*runner.Pair{p}, Source: runner.Seeded(s.RapidScripts(equiv.Exact)),
					Seed: 7, Checks: 300, Batch: 64, KeepGoing: true, Stats: true,
				})
				require.NoError(t, err)
				require.Zero(t, res.Failures)
				return res
			}
			var decodes atomic.Int64
			local, wire := run(false, nil), run(true, &decodes)
			require.Equal(t, 300, local.Checks)
			for _, r := range []*runner.Result{local, wire} {
				r.Seconds, r.OpsPerSec = 0, 0
				for i := range r.Findings {
					r.Findings[i].Seconds = 0 // when, not what
				}
			}
			require.Equal(t, local, wire)
			// Each script's outcome was decoded once (the same bytes on
			// both sides) or twice; here some only once. (Shrinking a
			// divergence decodes its candidates too: counted where none is.)
			if wire.Divergences == 0 {
				require.Less(t, decodes.Load(), int64(2*300), "no outcome was decoded once for both sides")
			}
			t.Logf("%d checks, %d divergences, %d outcomes decoded", wire.Checks, wire.Divergences, decodes.Load())
		})
	}
}

// Skipping the comparison of one value with itself is sound only because
// every relation is reflexive: an outcome is equivalent to itself, for the
// scripts of every subsystem, under every relation.
func TestEveryRelationIsReflexive(t *testing.T) {
	for _, s := range props.Subsystems() {
		o := open(t, "naive", false)
		gen := s.RapidScripts(equiv.Exact)
		var scripts [][]ops.Op
		for seed := range uint64(200) {
			scripts = append(scripts, gen(runner.ScriptSeed(3, int(seed))))
		}
		outs, err := o.side.Impl.Exec(context.Background(), ops.Config{}, scripts, nil)
		require.NoError(t, err)
		for _, rel := range equiv.Relations {
			for i, sc := range scripts {
				require.Nil(t, equiv.Compare(rel, sc, outs[i], outs[i]), "%s, %s, script %d", s.Name, rel, i)
			}
		}
	}
}
