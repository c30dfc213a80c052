package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A batch that came back slowly makes the next ones smaller at once, so
// that none outlasts a call timeout on a loaded machine or a slow guest;
// faster batches let them grow back slowly, never past BatchCost and
// never below one script.
func TestPaceBoundsTheNextBatch(t *testing.T) {
	p := &pace{}
	require.Equal(t, int64(UnmeasuredCost), p.limit(), "nothing measured yet")
	script := make([]ops.Op, 1000) // 1000 plain operations
	p.observe([][]ops.Op{script}, time.Millisecond)
	require.Equal(t, int64(BatchCost), p.limit(), "1 µs a unit: BatchCost takes 2 s")
	p.observe([][]ops.Op{script}, 10*time.Millisecond)
	require.InDelta(t, 800_000, p.limit(), 1, "10 µs a unit: 8 s is 800k")
	p.observe([][]ops.Op{script}, time.Second)
	require.InDelta(t, 8_000, p.limit(), 1, "slower: at once")
	p.observe([][]ops.Op{script}, time.Microsecond)
	require.InDelta(t, 10_000, p.limit(), 1, "faster: a fifth of the way")
	p.observe([][]ops.Op{make([]ops.Op, 1)}, time.Minute)
	require.Equal(t, int64(1), p.limit(), "never below one")
}

// A batch ends before the script that would take its cost past the
// limit, and that script starts the next batch: alone when it costs more
// than the limit by itself. Before any batch came back, the limit is
// UnmeasuredCost, so that a run's first batches (one per job) never hold
// two scripts that each wrap seq. Every script is drawn once, in order.
func TestBatchesEndBeforeTheScriptPastTheLimit(t *testing.T) {
	churn := func(n int64) []ops.Op { return []ops.Op{{Kind: ops.KindChurn, Value: n}} }
	costs := []int64{1, UnmeasuredCost / 2, UnmeasuredCost / 2, 3 * UnmeasuredCost, 1, 1}
	var drawnSeeds []uint64
	src := Seeded(func(seed uint64) []ops.Op {
		drawnSeeds = append(drawnSeeds, seed)
		return churn(costs[len(drawnSeeds)-1])
	})
	var got [][]int64
	var seeds []uint64
	for bt := range generate(t.Context(), Options{Checks: len(costs), Batch: 16, Seed: 7, Source: src}, &pace{}, nil) {
		var cs []int64
		for _, s := range bt.scripts {
			cs = append(cs, ops.Cost(s))
		}
		got = append(got, cs)
		seeds = append(seeds, bt.seeds...)
	}
	require.Equal(t, [][]int64{{1, UnmeasuredCost / 2}, {UnmeasuredCost / 2}, {3 * UnmeasuredCost}, {1, 1}}, got)
	require.Equal(t, drawnSeeds, seeds, "each script drawn once, in order")
	for i, s := range seeds {
		require.Equal(t, ScriptSeed(7, i), s)
	}
}
