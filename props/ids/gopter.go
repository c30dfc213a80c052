package ids

import (
	"context"
	"errors"
	"maps"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// clone copies the shadow so that gopter's states are never shared.
func (s *Shadow) clone() *Shadow {
	c := *s
	for i, ts := range s.types {
		objs := map[*object]*object{}
		cp := func(o *object) *object {
			if o == nil {
				return nil
			}
			if n, ok := objs[o]; ok {
				return n
			}
			n := *o
			objs[o] = &n
			return &n
		}
		nt := &typeShadow{handles: map[int]*object{}, keys: map[int32]*object{}, order: append([]int(nil), ts.order...), live: ts.live, limit: ts.limit}
		for h, o := range ts.handles {
			nt.handles[h] = cp(o)
		}
		for k, o := range maps.All(ts.keys) {
			nt.keys[k] = cp(o)
		}
		nt.refresh()
		c.types[i] = nt
	}
	return &c
}

// Shadowed is a Stepper whose shadow can be copied, so that gopter's states
// are never shared.
type Shadowed interface {
	Stepper
	Copy() Shadowed
}

// Copy implements Shadowed.
func (s *Shadow) Copy() Shadowed { return s.clone() }

// Drawn is one gopter command's payload: the operation and the shadow after it.
type Drawn struct {
	Op    ops.Op
	After Shadowed
}

// OpGen is the gopter generator of the next operation from a shadow state;
// the shadow itself is not changed.
func OpGen(state Shadowed) gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		next := state.Copy()
		op := next.Step(RandSource{p.Rng})
		return gopter.NewGenResult(Drawn{Op: op, After: next}, gopter.NoShrinker)
	}
}

// Commands builds gopter commands whose system under test is the pair: each
// command applies one operation to both sides, checks both states against
// invariant (when not nil) and compares everything so far under the pair's
// relation.
func Commands(p Pair, initial func() Shadowed, invariant func(ops.Snapshot) error) *commands.ProtoCommands {
	type sut struct {
		script []ops.Op
		out    [2]ops.Outcome
	}
	ctx := context.Background()
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest {
			if err := p.A.Reset(ctx, p.CfgA); err != nil {
				panic(err)
			}
			if err := p.B.Reset(ctx, p.CfgB); err != nil {
				panic(err)
			}
			return &sut{}
		},
		InitialStateGen: func(*gopter.GenParameters) *gopter.GenResult {
			return gopter.NewGenResult(initial(), gopter.NoShrinker)
		},
		GenCommandFunc: func(st commands.State) gopter.Gen {
			return OpGen(st.(Shadowed)).Map(func(d Drawn) commands.Command {
				return &commands.ProtoCommand{
					Name: ops.FormatOp(d.Op),
					RunFunc: func(s commands.SystemUnderTest) commands.Result {
						u := s.(*sut)
						ra, errA := p.A.Apply(ctx, []ops.Op{d.Op})
						rb, errB := p.B.Apply(ctx, []ops.Op{d.Op})
						if err := errors.Join(errA, errB); err != nil {
							return &equiv.Divergence{Step: len(u.script), Reason: "an implementation failed: " + err.Error()}
						}
						u.script = append(u.script, d.Op)
						u.out[0].Results = append(u.out[0].Results, ra...)
						u.out[1].Results = append(u.out[1].Results, rb...)
						u.out[0].Snapshot, errA = p.A.Snapshot(ctx)
						u.out[1].Snapshot, errB = p.B.Snapshot(ctx)
						if err := errors.Join(errA, errB); err != nil {
							return &equiv.Divergence{Step: -1, Reason: "snapshot: " + err.Error()}
						}
						if invariant != nil {
							for _, o := range u.out {
								if err := invariant(o.Snapshot); err != nil {
									return &equiv.Divergence{Step: -1, Reason: err.Error()}
								}
							}
						}
						return equiv.Compare(p.Relation, u.script, u.out[0], u.out[1])
					},
					NextStateFunc: func(commands.State) commands.State { return d.After },
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

// GopterScripts returns the function that gives the script gopter's
// generators draw for a seed: a length, a focus type, then one OpGen draw per
// step.
func GopterScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	return func(seed uint64) []ops.Op { return gopterScript(rel, seed) }
}

func gopterScript(rel equiv.Relation, seed uint64) []ops.Op {
	p := gopter.DefaultGenParameters()
	p.Rng.Seed(int64(seed))
	src := RandSource{p.Rng}
	n := 1 + src.Intn(MaxLen, "length")
	state := NewShadow(rel)
	state.focus = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "focus")]
	state.churn = src.Intn(3, "churn") == 0
	out := make([]ops.Op, 0, n)
	for range n {
		d := OpGen(state)(p).Result.(Drawn)
		out = append(out, d.Op)
		state = d.After.(*Shadow)
	}
	return out
}
