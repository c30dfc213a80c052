package runner

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// StepReader yields a script's steps in order: an ops.ScriptReader reading
// a file, or a script held in memory (StepsOf).
type StepReader interface {
	// Next reads the next step: false at the end or at an error.
	Next() bool
	// Step is the step Next read.
	Step() ops.Step
	// Err is what stopped Next early, nil at the end of the script.
	Err() error
}

// StepsOf reads the steps of a script held in memory.
func StepsOf(sc *ops.Script) StepReader { return &sliceSteps{steps: sc.Steps, i: -1} }

type sliceSteps struct {
	steps []ops.Step
	i     int
}

func (s *sliceSteps) Next() bool {
	if s.i+1 >= len(s.steps) {
		s.i = len(s.steps)
		return false
	}
	s.i++
	return true
}

func (s *sliceSteps) Step() ops.Step { return s.steps[s.i] }
func (s *sliceSteps) Err() error     { return nil }

// chunk is a run of consecutive steps of a script: their operations, the
// results they state (nil where none), and where they start in the script.
type chunk struct {
	start int
	ops   []ops.Op
	want  []*ops.Result
	last  bool // no step follows
}

// chunks reads steps into chunks of size steps, one chunk ahead of the
// caller (a goroutine parses while the sides run). The channel closes after
// the last chunk, or early when ctx ends or reading fails; wait then tells
// why reading stopped (nil at the end of the script, or when ctx ended).
func chunks(ctx context.Context, r StepReader, size int) (<-chan *chunk, func() error) {
	ch := make(chan *chunk, 1)
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		more := r.Next()
		// The first chunk grows to its size (a script may be much
		// shorter); the chunks after a full one are made full.
		room := min(size, 1024)
		for start := 0; more; room = size {
			c := &chunk{start: start, ops: make([]ops.Op, 0, room), want: make([]*ops.Result, 0, room)}
			for more && len(c.ops) < size {
				st := r.Step()
				c.ops = append(c.ops, st.Op)
				c.want = append(c.want, st.Want)
				more = r.Next()
			}
			c.last = !more
			start += len(c.ops)
			select {
			case ch <- c:
			case <-ctx.Done():
				return
			}
		}
		err = r.Err()
	}()
	return ch, func() error { <-done; return err }
}

// firstChunk waits for the first chunk of in (from chunks, whose wait is
// readErr): an empty last chunk where the script has no steps (the initial
// states compare). A first chunk that is the last is returned only where
// reading ended without an error: the whole script then runs in one call
// per side.
func firstChunk(ctx context.Context, in <-chan *chunk, readErr func() error) (*chunk, error) {
	first, ok := <-in
	if !ok {
		if err := readErr(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		first = &chunk{last: true}
	}
	if first.last {
		if err := readErr(); err != nil {
			return nil, err
		}
	}
	return first, nil
}

// applyChunk applies one chunk's operations on both sides, a follower
// following the other side's results.
func (p *Pair) applyChunk(ctx context.Context, c *chunk) (ra, rb []ops.Result, err error) {
	ra, rb, errA, errB := both(p, func(s Side, leader *[]ops.Result) ([]ops.Result, error) {
		var follow []ops.Result
		if leader != nil {
			follow = *leader
		}
		rs, err := s.Impl.Apply(ctx, c.ops, follow)
		if err == nil && len(rs) != len(c.ops) {
			err = fmt.Errorf("%s returned %d results for %d operations", s.Name, len(rs), len(c.ops))
		}
		return rs, err
	})
	if err := sideErrors(errA, errB); err != nil {
		return nil, nil, fmt.Errorf("steps %d-%d: %w", c.start+1, c.start+len(c.ops), err)
	}
	return ra, rb, nil
}

// resetBoth resets both sides, each with its Config.
func (p *Pair) resetBoth(ctx context.Context) error {
	_, _, errA, errB := both(p, func(s Side, _ *struct{}) (struct{}, error) {
		return struct{}{}, s.Impl.Reset(ctx, s.Config)
	})
	return sideErrors(errA, errB)
}

// snapshotBoth takes both sides' final snapshots, a follower following the
// other side's.
func (p *Pair) snapshotBoth(ctx context.Context) (sa, sb ops.Snapshot, err error) {
	sa, sb, errA, errB := both(p, func(s Side, leader *ops.Snapshot) (ops.Snapshot, error) {
		return s.Impl.Snapshot(ctx, leader)
	})
	return sa, sb, sideErrors(errA, errB)
}

// RunSteps runs a script read step by step on one side, as Pair.Replay
// does (one Exec when the script fits in one chunk;
// else Reset, Apply of each chunk, Snapshot), and hands each step with its
// result to each, in order, as the results come. It returns how many steps
// ran. size is the chunk's, in operations; 0 means DefaultChunk.
func RunSteps(ctx context.Context, steps StepReader, s Side, size int, each func(ops.Step, ops.Result) error) (int, error) {
	if size <= 0 {
		size = DefaultChunk
	}
	ctx, cancel := context.WithCancel(ctx)
	in, readErr := chunks(ctx, steps, size)
	defer func() {
		cancel()
		_ = readErr()
	}()
	give := func(c *chunk, rs []ops.Result) error {
		if len(rs) != len(c.ops) {
			return fmt.Errorf("%s returned %d results for %d operations", s.Name, len(rs), len(c.ops))
		}
		for i, op := range c.ops {
			if err := each(ops.Step{Op: op, Want: c.want[i]}, rs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	first, err := firstChunk(ctx, in, readErr)
	if err != nil {
		return 0, err
	}
	if first.last {
		out, err := execSide(ctx, s, [][]ops.Op{first.ops}, nil)
		if err != nil {
			return 0, err
		}
		return len(first.ops), give(first, out[0].Results)
	}
	if err := s.Impl.Reset(ctx, s.Config); err != nil {
		return 0, err
	}
	n := 0
	for c := first; c != nil; c = <-in {
		rs, err := s.Impl.Apply(ctx, c.ops, nil)
		if err != nil {
			return n, fmt.Errorf("steps %d-%d: %w", c.start+1, c.start+len(c.ops), err)
		}
		if err := give(c, rs); err != nil {
			return n, err
		}
		n += len(c.ops)
	}
	if err := readErr(); err != nil {
		return n, err
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if _, err := s.Impl.Snapshot(ctx, nil); err != nil {
		return n, err
	}
	return n, nil
}
