package ids

import (
	"context"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Pair is two implementations compared under a relation.
type Pair struct {
	A, B       ops.Impl
	CfgA, CfgB ops.Config
	Relation   equiv.Relation
}

// Stepper draws the operations of a state machine from a shadow it keeps.
type Stepper interface {
	Step(src Source) ops.Op
}

// Machine is the rapid state machine of the ids subsystem.
func Machine(p Pair) func(*rapid.T) {
	return RunMachine(p, func(t *rapid.T) Stepper {
		shadow := NewShadow(p.Relation)
		shadow.focus = ops.IPCTypes[rapid.IntRange(0, len(ops.IPCTypes)-1).Draw(t, "focus")]
		shadow.churn = rapid.Bool().Draw(t, "churn")
		return shadow
	}, nil)
}

// RunMachine is a rapid state machine over any subsystem: every step draws
// one operation from the stepper, applies it to both sides and checks that
// both states satisfy invariant (when not nil) and that everything so far,
// results and the states after the step, agrees under the pair's relation.
func RunMachine(p Pair, newStepper func(*rapid.T) Stepper, invariant func(ops.Snapshot) error) func(*rapid.T) {
	return func(t *rapid.T) {
		ctx := context.Background()
		if err := p.A.Reset(ctx, p.CfgA); err != nil {
			t.Fatalf("reset A: %v", err)
		}
		if err := p.B.Reset(ctx, p.CfgB); err != nil {
			t.Fatalf("reset B: %v", err)
		}
		stepper := newStepper(t)
		var script []ops.Op
		var outA, outB ops.Outcome
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) {
				op := stepper.Step(NewRapidSource(t))
				t.Log(ops.FormatOp(op))
				ra, err := p.A.Apply(ctx, []ops.Op{op})
				if err != nil {
					t.Fatalf("A: %v", err)
				}
				rb, err := p.B.Apply(ctx, []ops.Op{op})
				if err != nil {
					t.Fatalf("B: %v", err)
				}
				script = append(script, op)
				outA.Results = append(outA.Results, ra...)
				outB.Results = append(outB.Results, rb...)
			},
			"": func(t *rapid.T) {
				var err error
				if outA.Snapshot, err = p.A.Snapshot(ctx); err != nil {
					t.Fatalf("snapshot A: %v", err)
				}
				if outB.Snapshot, err = p.B.Snapshot(ctx); err != nil {
					t.Fatalf("snapshot B: %v", err)
				}
				if invariant != nil {
					for side, s := range []ops.Snapshot{outA.Snapshot, outB.Snapshot} {
						if err := invariant(s); err != nil {
							t.Fatalf("%s: %v", "AB"[side:side+1], err)
						}
					}
				}
				if d := equiv.Compare(p.Relation, script, outA, outB); d != nil {
					t.Fatalf("divergence: %v", d)
				}
			},
		})
	}
}
