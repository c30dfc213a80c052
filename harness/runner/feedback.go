package runner

import (
	"context"
	"sync"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// feedback carries what each script did from the collector, which takes
// the scripts in order, to the generator, which tells a Learner on its own
// goroutine just before it draws: script i is drawn after the Learner was
// told of scripts 0..i-lag-1 and of no other. What a Learner draws is then
// a function of the run's seed and lag alone, however the plugins' timing
// interleaves the two goroutines, and a guided run is as repeatable as a
// seeded one.
//
// lag must be at least the largest batch: script i's batch is being drawn,
// so only scripts of earlier batches (all handed to the workers) can be
// waited for.
type feedback struct {
	learner Learner
	lag     int

	mu    sync.Mutex
	queue []told
	ready chan struct{} // a push happened (capacity 1, never blocks)
	told  int           // scripts told to the learner so far
}

// told is one script and what it did on both sides (zero Outcomes when it
// was not compared: a side failed on it).
type told struct {
	script []ops.Op
	outs   [2]ops.Outcome
}

func newFeedback(l Learner, lag int) *feedback {
	return &feedback{learner: l, lag: lag, ready: make(chan struct{}, 1)}
}

// push queues the next script in script order; the collector calls it for
// every script it takes.
func (f *feedback) push(script []ops.Op, outs [2]ops.Outcome) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.queue = append(f.queue, told{script, outs})
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// before tells the learner of every script up to i-lag-1, waiting for
// them to be taken; false when ctx ended first.
func (f *feedback) before(ctx context.Context, i int) bool {
	if f == nil {
		return true
	}
	for f.told < i-f.lag {
		f.mu.Lock()
		q := f.queue
		n := min(len(q), i-f.lag-f.told)
		f.queue = q[n:]
		f.mu.Unlock()
		for _, t := range q[:n] {
			f.learner.Feedback(t.script, t.outs)
		}
		f.told += n
		if n > 0 {
			continue
		}
		select {
		case <-f.ready:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// flush tells the learner of every script taken and not yet told: the
// run's last ones. It is called once no script will be drawn.
func (f *feedback) flush() {
	if f == nil {
		return
	}
	f.mu.Lock()
	q := f.queue
	f.queue = nil
	f.mu.Unlock()
	for _, t := range q {
		f.learner.Feedback(t.script, t.outs)
	}
	f.told += len(q)
}
