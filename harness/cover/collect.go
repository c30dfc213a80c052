package cover

import (
	"slices"
	"sync"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Collector gathers the distinct program counters of a run's observations
// (ops.Observation.PCs), from any number of goroutines.
type Collector struct {
	mu  sync.Mutex
	pcs map[uint64]struct{}
	// ops counts the operations observed, and covered those that came
	// with program counters.
	ops, covered int
}

// Outcomes adds the observations of outs.
func (c *Collector) Outcomes(outs []ops.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pcs == nil {
		c.pcs = map[uint64]struct{}{}
	}
	for _, o := range outs {
		for _, obs := range o.Observed {
			c.ops++
			if len(obs.PCs) > 0 {
				c.covered++
			}
			for _, pc := range obs.PCs {
				c.pcs[pc] = struct{}{}
			}
		}
	}
}

// PCs returns the distinct program counters gathered, sorted.
func (c *Collector) PCs() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]uint64, 0, len(c.pcs))
	for pc := range c.pcs {
		out = append(out, pc)
	}
	slices.Sort(out)
	return out
}

// Ops returns how many operations were observed, and how many of them
// came with program counters.
func (c *Collector) Ops() (observed, covered int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops, c.covered
}
