package runner

import (
	"context"
	"errors"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Stepper runs a growing script on a pair one operation at a time, for the
// drivers that draw a script step by step (a rapid state machine, gopter
// commands), and compares everything so far after each step.
type Stepper struct {
	p      *Pair
	races  bool
	script []ops.Op
	out    [2]ops.Outcome
}

// Stepper returns a stepper on the pair.
func (p *Pair) Stepper() *Stepper {
	return &Stepper{p: p, races: p.A.Follows || p.B.Follows}
}

// Script is the script so far.
func (s *Stepper) Script() []ops.Op { return s.script }

// Reset starts a new script: both sides get a fresh state.
func (s *Stepper) Reset(ctx context.Context) error {
	s.script, s.out = nil, [2]ops.Outcome{}
	if s.races {
		return nil // every step runs the whole script from a reset
	}
	_, _, errA, errB := both(s.p, func(side Side, _ *struct{}) (struct{}, error) {
		return struct{}{}, side.Impl.Reset(ctx, side.Config)
	})
	return sideErrors(errA, errB)
}

// Step applies op to both sides and refreshes both snapshots. Where a side
// follows, the whole script so far runs again (the follower following the
// other), since a model can follow only a whole script.
func (s *Stepper) Step(ctx context.Context, op ops.Op) error {
	s.script = append(s.script, op)
	if s.races {
		outA, outB, _, errA, errB := s.p.exec(ctx, [][]ops.Op{s.script})
		if err := sideErrors(errA, errB); err != nil {
			return err
		}
		s.out = [2]ops.Outcome{outA[0], outB[0]}
		return nil
	}
	type step struct {
		r    []ops.Result
		snap ops.Snapshot
	}
	ra, rb, errA, errB := both(s.p, func(side Side, _ *step) (step, error) {
		rs, err := side.Impl.Apply(ctx, []ops.Op{op}, nil)
		if err != nil {
			return step{}, err
		}
		if len(rs) != 1 {
			return step{}, errors.New(side.Name + " returned no result")
		}
		snap, err := side.Impl.Snapshot(ctx, nil)
		return step{rs, snap}, err
	})
	if err := sideErrors(errA, errB); err != nil {
		return err
	}
	for i, r := range []step{ra, rb} {
		s.out[i].Results = append(s.out[i].Results, r.r...)
		s.out[i].Snapshot = r.snap
	}
	return nil
}

// Check tests both states against the pair's invariant and compares
// everything so far under its relation; nil when they agree.
func (s *Stepper) Check() *equiv.Divergence {
	return s.p.verdict(s.script, s.out[0], s.out[1], false).Div
}
