package ids

import (
	"maps"

	"github.com/leanovate/gopter"

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

// Drawn is one gopter command's payload: the operation and the shadow after it.
type Drawn struct {
	Op    ops.Op
	After *Shadow
}

// OpGen is the gopter generator of the next operation from a shadow state;
// the shadow itself is not changed.
func OpGen(state *Shadow) gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		next := state.clone()
		op := next.Step(RandSource{p.Rng})
		return gopter.NewGenResult(Drawn{Op: op, After: next}, gopter.NoShrinker)
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
		state = d.After
	}
	return out
}
