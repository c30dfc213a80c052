package engine

import (
	"context"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Pair is two implementations compared under a relation.
type Pair struct {
	A, B     runner.Side
	Relation equiv.Relation
}

// shareLimits gives each side of p the machine facts the other reports
// (runner.ShareLimits), as compare does.
func (p *Pair) shareLimits(ctx context.Context) error {
	return runner.ShareLimits(ctx, []*runner.Side{&p.A, &p.B})
}

// stepper runs a growing script on a pair, one operation at a time.
type stepper struct {
	p      Pair
	races  bool
	script []ops.Op
	out    [2]ops.Outcome
}

func (s *stepper) reset(ctx context.Context) error {
	s.script, s.out = nil, [2]ops.Outcome{}
	if s.races {
		return nil
	}
	if err := s.p.A.Impl.Reset(ctx, s.p.A.Config); err != nil {
		return err
	}
	return s.p.B.Impl.Reset(ctx, s.p.B.Config)
}

// step applies op to both sides and refreshes both snapshots. Where the
// subsystem races, the whole script so far runs again (one side following
// the other), since a model can follow only a whole script.
func (s *stepper) step(ctx context.Context, op ops.Op) error {
	s.script = append(s.script, op)
	if s.races {
		outA, outB, errA, errB := runner.ExecBoth(ctx, s.p.A, s.p.B, [][]ops.Op{s.script})
		if errA != nil {
			return errA
		}
		if errB != nil {
			return errB
		}
		s.out = [2]ops.Outcome{outA[0], outB[0]}
		return nil
	}
	for i, side := range []runner.Side{s.p.A, s.p.B} {
		rs, err := side.Impl.Apply(ctx, []ops.Op{op})
		if err != nil {
			return err
		}
		s.out[i].Results = append(s.out[i].Results, rs...)
		if s.out[i].Snapshot, err = side.Impl.Snapshot(ctx); err != nil {
			return err
		}
	}
	return nil
}

// check tests both states against the invariant and compares everything
// so far under the pair's relation.
func (s *stepper) check(invariant func(ops.Snapshot) error) *equiv.Divergence {
	if invariant != nil {
		for side, o := range s.out {
			if err := invariant(o.Snapshot); err != nil {
				return &equiv.Divergence{Step: -1, Reason: "AB"[side:side+1] + ": invariant: " + err.Error()}
			}
		}
	}
	return equiv.Compare(s.p.Relation, s.script, s.out[0], s.out[1])
}

// Machine is the rapid state machine of the subsystem over a pair: every
// step draws one operation from the shadow, applies it to both sides and
// checks that both states satisfy the invariant and that everything so far,
// results and states, agrees under the pair's relation.
func (s Subsystem) Machine(p Pair) func(*rapid.T) {
	shared := p.shareLimits(context.Background())
	return func(t *rapid.T) {
		ctx := context.Background()
		if shared != nil {
			t.Fatalf("%v", shared)
		}
		st := &stepper{p: p, races: s.Races()}
		if err := st.reset(ctx); err != nil {
			t.Fatalf("reset: %v", err)
		}
		shadow := s.NewShadow(NewRapidSource(t), p.Relation)
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) {
				op := shadow.Step(NewRapidSource(t))
				t.Log(ops.FormatOp(op))
				if err := st.step(ctx, op); err != nil {
					t.Fatalf("%v", err)
				}
			},
			"": func(t *rapid.T) {
				if d := st.check(s.Invariant); d != nil {
					t.Fatalf("divergence: %v\n%s", d, ops.Format(ops.NewScript(s.Name, st.script)))
				}
			},
		})
	}
}
