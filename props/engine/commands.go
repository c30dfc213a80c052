package engine

import (
	"context"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// drawn is one gopter command's payload: the operation and the shadow after it.
type drawn struct {
	op    ops.Op
	after Shadow
}

// opGen is the gopter generator of the next operation from a shadow state;
// the state itself is not changed.
func opGen(state Shadow) gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		next := state.Copy()
		op := next.Step(RandSource{Rng: p.Rng})
		return gopter.NewGenResult(drawn{op: op, after: next}, gopter.NoShrinker)
	}
}

// Commands builds gopter commands whose system under test is the pair:
// each command applies one operation to both sides, checks both states
// against the invariant and compares everything so far under the pair's
// relation. gopter shrinks a failing sequence of commands itself.
func (s Subsystem) Commands(p *runner.Pair) *commands.ProtoCommands {
	ctx := context.Background()
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest {
			st := p.Stepper()
			if err := st.Reset(ctx); err != nil {
				panic(err)
			}
			return st
		},
		InitialStateGen: func(gp *gopter.GenParameters) *gopter.GenResult {
			return gopter.NewGenResult(s.NewShadow(RandSource{Rng: gp.Rng}, p.Relation), gopter.NoShrinker)
		},
		GenCommandFunc: func(state commands.State) gopter.Gen {
			return opGen(state.(Shadow)).Map(func(d drawn) commands.Command {
				return &commands.ProtoCommand{
					Name: ops.FormatOp(d.op),
					RunFunc: func(sut commands.SystemUnderTest) commands.Result {
						st := sut.(*runner.Stepper)
						if err := st.Step(ctx, d.op); err != nil {
							return failed(st, err)
						}
						return st.Check()
					},
					NextStateFunc: func(commands.State) commands.State { return d.after },
					PostConditionFunc: func(_ commands.State, r commands.Result) *gopter.PropResult {
						if d, _ := r.(*equiv.Divergence); d != nil {
							return &gopter.PropResult{Status: gopter.PropFalse, Error: d}
						}
						return &gopter.PropResult{Status: gopter.PropTrue}
					},
				}
			})
		},
	}
}
