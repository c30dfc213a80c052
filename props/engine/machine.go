package engine

import (
	"context"
	"fmt"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Pair builds the comparison of a and b on the subsystem's scripts under
// rel (runner.NewPair), with the subsystem's invariant.
func (s Subsystem) Pair(ctx context.Context, a, b runner.Side, rel equiv.Relation) (*runner.Pair, error) {
	p, err := runner.NewPair(ctx, a, b, s.Name, rel)
	if err != nil {
		return nil, err
	}
	p.Invariant = s.Invariant
	return p, nil
}

// Machine is the rapid state machine of the subsystem over a pair: every
// step draws one operation from the shadow, applies it to both sides and
// checks that both states satisfy the pair's invariant and that everything
// so far, results and states, agrees under the pair's relation.
func (s Subsystem) Machine(p *runner.Pair) func(*rapid.T) {
	return func(t *rapid.T) {
		ctx := context.Background()
		st := p.Stepper()
		if err := st.Reset(ctx); err != nil {
			t.Fatalf("reset: %v", err)
		}
		shadow := s.NewShadow(NewRapidSource(t), p.Relation)
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) {
				op := shadow.Step(NewRapidSource(t))
				t.Log(ops.FormatOp(op))
				if err := st.Step(ctx, op); err != nil {
					t.Fatalf("%v", err)
				}
			},
			"": func(t *rapid.T) {
				if d := st.Check(); d != nil {
					t.Fatalf("divergence: %v\n%s", d, ops.Format(ops.NewScript(s.Name, st.Script())))
				}
			},
		})
	}
}

// failed is the divergence a step that failed on a side stands for.
func failed(st *runner.Stepper, err error) *equiv.Divergence {
	return &equiv.Divergence{Step: len(st.Script()) - 1, Reason: fmt.Sprintf("an implementation failed: %v", err)}
}
