package vma

import (
	"fmt"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// MaxBrkExpandN is the largest number of VMAs the brk-expand workload
// builds (the kernel's default max_map_count is 65530).
const MaxBrkExpandN = 1 << 15

// The counters of the brk-expand workload, for one repetition.
const (
	CounterBrkGrow     = "brk_grow"     // brk calls that extended the heap VMA
	CounterBrkShrink   = "brk_shrink"   // brk calls that unmapped its last page
	CounterWalksGrow   = "walks_grow"   // layout walks in the growing calls
	CounterNodesGrow   = "nodes_grow"   // nodes those walks visited
	CounterWalksShrink = "walks_shrink" // layout walks in the shrinking calls
	CounterNodesShrink = "nodes_shrink" // nodes those walks visited
)

// MeasureBrkExpand runs the brk-expand workload: the space is reset, n
// one-page anonymous VMAs are mapped (with a free page between any two, so
// none merge), the heap gets one page; then each repetition does
// ops.BrkRounds rounds of a brk up by one page (the heap VMA is extended)
// and back down (its last page is unmapped). WallNs has each repetition's
// time; the counters are those of one repetition (they are the same for
// every one).
func (s *Space) MeasureBrkExpand(n, reps int) (ops.Measurement, error) {
	if n < 0 || n > MaxBrkExpandN || reps < 1 {
		return ops.Measurement{}, fmt.Errorf("vma: brk-expand with %d VMAs and %d repetitions: want 0..%d VMAs and at least one repetition", n, reps, MaxBrkExpandN)
	}
	s.clear()
	flags := vmDataDefault | VMAccount
	for i := int64(0); i < int64(n); i++ {
		addr := windowBase + 2*i
		s.mmapRegion(nil, addr, addr+1, flags, addr)
	}
	if errno, err := s.Brk(ops.VMAArgs{Break: 1}); err != nil || errno != ops.OK {
		return ops.Measurement{}, fmt.Errorf("vma: brk-expand setup: brk to one page: %v %v", errno, err)
	}
	m := ops.Measurement{Primary: CounterNodesGrow}
	for r := 0; r < reps; r++ {
		c := map[string]int64{}
		t0 := time.Now()
		for i := 0; i < ops.BrkRounds; i++ {
			if err := s.countedBrk(2, c, CounterBrkGrow, CounterWalksGrow, CounterNodesGrow); err != nil {
				return m, err
			}
			if err := s.countedBrk(1, c, CounterBrkShrink, CounterWalksShrink, CounterNodesShrink); err != nil {
				return m, err
			}
		}
		m.WallNs = append(m.WallNs, time.Since(t0).Nanoseconds())
		m.Counters = c
	}
	return m, nil
}

// countedBrk moves the break to page brk and adds the walks it took.
func (s *Space) countedBrk(brk int64, c map[string]int64, calls, walks, nodes string) error {
	before := s.layout.Counts()
	errno, err := s.Brk(ops.VMAArgs{Break: brk})
	if err != nil || errno != ops.OK {
		return fmt.Errorf("vma: brk-expand: brk to page %d: %v %v", brk, errno, err)
	}
	after := s.layout.Counts()
	c[calls]++
	c[walks] += after.Walks - before.Walks
	c[nodes] += after.Nodes - before.Nodes
	return nil
}
