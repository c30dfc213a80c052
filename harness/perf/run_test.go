package perf_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/perf"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// A run whose every script repeats a get before a listing finds the naive
// listing growing faster than the optimized one: one finding, stored with
// the run's header fields, its hits counted over the scripts that show it
// again, and the replay command naming the file.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pair, closeAll, err := sides.OpenPair(ctx, "optimized", "naive", "shm", equiv.Exact, sides.Options{InProcess: true})
	require.NoError(t, err)
	t.Cleanup(closeAll)
	sc := opstest.Script(t, "subsystem shm\nget shm key=0x0 mode=0600 size=1\nget shm key=0x0 mode=0600 size=1\nget shm key=0x0 mode=0600 size=1\nlist shm\n")
	var report bytes.Buffer
	o := perf.RunOptions{
		Options: perf.Options{Sizes: []int{8, 16, 32, 48}, Reps: 1, Threshold: perf.DefaultThreshold,
			A: complexity.Subject{Name: pair.A.Name, Impl: pair.A.Impl, Config: pair.A.Config},
			B: complexity.Subject{Name: pair.B.Name, Impl: pair.B.Impl, Config: pair.B.Config}},
		Pair: pair, Generate: func(uint64) []ops.Op { return sc.Ops() }, Seed: 3, Checks: 2, KeepGoing: true,
		Corpus: t.TempDir(), Header: corpus.Header{Command: "ipcfuzz compare optimized naive --perf", Engine: "rapid", A: "optimized", B: "naive"},
		Replay: "judge FILE", Report: &report,
	}
	res, err := perf.Run(ctx, o)
	require.NoError(t, err)
	require.Equal(t, 2, res.Checks)
	require.Equal(t, 1, res.Performance, report.String())
	require.Len(t, res.Scripts, 1)
	f := res.Findings[0]
	require.Greater(t, f.Hits, 1, "cut again from the second script")
	require.Equal(t, perf.Kind, f.Kind)
	require.Contains(t, report.String(), "performance finding "+f.Signature+" (script 0)")

	text, err := os.ReadFile(res.Scripts[0])
	require.NoError(t, err)
	h := corpus.ParseHeader(string(text))
	require.Equal(t, uint64(3), h.Seed)
	require.Equal(t, "rapid", h.Engine)
	require.Equal(t, "exact", h.Relation)
	require.Equal(t, f.Hits, h.Hits, "the file is rewritten with the hits")
	require.Equal(t, "optimized", h.A)
	require.Contains(t, string(text), "judge it again: judge "+res.Scripts[0])

}
