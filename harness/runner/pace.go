package runner

import (
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// BatchTime is what one batch is meant to take at most, judged by the
// batches before it: a small part of any call timeout (a minute at least,
// times a guest's slowdown), so that a loaded machine or a slow guest
// makes batches smaller rather than outlast the timeout.
const BatchTime = 8 * time.Second

// pace learns how long a unit of ops.Cost takes on the slowest pair, from
// every batch that came back, and bounds the cost of the batches drawn
// next so that each is expected to take at most BatchTime. Batches never
// change a verdict (each script runs on a fresh state), only how many
// scripts go in one call.
type pace struct {
	mu      sync.Mutex
	perCost float64 // seconds per unit of cost; 0 until a batch came back
}

// observe records a batch of scripts that took d.
func (p *pace) observe(scripts [][]ops.Op, d time.Duration) {
	var cost int64
	for _, s := range scripts {
		cost += ops.Cost(s)
	}
	if cost <= 0 || d <= 0 {
		return
	}
	per := d.Seconds() / float64(cost)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.perCost == 0 || per > p.perCost:
		p.perCost = per // slower: at once
	default:
		p.perCost = 0.8*p.perCost + 0.2*per // faster: slowly
	}
}

// UnmeasuredCost is the cost a batch may have before any batch came back:
// a sixteenth of BatchCost, so that the batches drawn while the first one
// runs (one per job, and one ahead) do not bet a guest's call timeout on
// the host's speed. A script that wraps seq still runs, as a batch of its
// own.
const UnmeasuredCost = BatchCost / 16

// limit is the cost the next batch may have: BatchCost, or less where the
// batches so far say that BatchCost would take longer than BatchTime, or
// UnmeasuredCost while none came back.
func (p *pace) limit() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.perCost == 0 {
		return UnmeasuredCost
	}
	return max(1, min(BatchCost, int64(BatchTime.Seconds()/p.perCost)))
}
