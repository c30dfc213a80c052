package vma

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The naive brk (6.12 before the just-expand hotfix) takes exactly two more
// walks per expanding brk than the optimized one, at every size; shrinking
// costs the same; and the tree's walks visit a number of nodes that grows
// like log n.
func TestBrkExpandCounters(t *testing.T) {
	prevNodes := 0.0
	for _, n := range []int{0, 1, 2, 10, 100, 1000, 10000} {
		naive, err := NewNaive(ops.VMAQuirksLinux618).MeasureBrkExpand(n, 2)
		require.NoError(t, err)
		opt, err := NewOptimized(ops.VMAQuirksLinux618).MeasureBrkExpand(n, 2)
		require.NoError(t, err)
		grows := opt.Counters[CounterBrkGrow]
		require.Equal(t, int64(ops.BrkRounds), grows)
		require.Equal(t, naive.Counters[CounterBrkGrow], grows)
		require.Equal(t, 2*grows, naive.Counters[CounterWalksGrow]-opt.Counters[CounterWalksGrow], "n=%d", n)
		require.Equal(t, naive.Counters[CounterWalksShrink], opt.Counters[CounterWalksShrink], "n=%d", n)
		require.Len(t, opt.WallNs, 2)

		perWalk := float64(opt.Counters[CounterNodesGrow]) / float64(opt.Counters[CounterWalksGrow])
		require.GreaterOrEqual(t, perWalk, prevNodes, "n=%d: nodes per walk fell", n)
		require.LessOrEqual(t, perWalk, 1.45*log2(n+2)+1, "n=%d: %.1f nodes per walk is not logarithmic", n, perWalk)
		prevNodes = perWalk
	}
}

func TestBrkExpandLeavesOneHeapVMA(t *testing.T) {
	s := NewOptimized(ops.VMAQuirksLinux618)
	_, err := s.MeasureBrkExpand(5, 1)
	require.NoError(t, err)
	st, err := s.State()
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Brk)
	require.Equal(t, "h:0-1 rw-p anon [heap] mr,mw,me,ac", ops.FormatVMA(st.VMAs[len(st.VMAs)-1]))
	_, err = s.MeasureBrkExpand(MaxBrkExpandN+1, 1)
	require.Error(t, err)
}

// BenchmarkBrkExpand reports the cost of one brk of the brk-expand workload
// (ns/brk) for each composition and size.
func BenchmarkBrkExpand(b *testing.B) {
	for _, c := range []struct {
		name string
		mk   func(ops.VMAQuirks) *Space
	}{{"naive", NewNaive}, {"optimized", NewOptimized}} {
		for _, n := range []int{10, 1000, 30000} {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				s := c.mk(ops.VMAQuirksLinux618)
				var ns int64
				for i := 0; i < b.N; i++ {
					m, err := s.MeasureBrkExpand(n, 1)
					if err != nil {
						b.Fatal(err)
					}
					ns += m.WallNs[0]
				}
				b.ReportMetric(float64(ns)/float64(b.N)/float64(ops.BrkExpandCalls), "ns/brk")
			})
		}
	}
}
