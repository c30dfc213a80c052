package shm

import (
	"github.com/leanovate/gopter"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
)

// ScriptGen is the rapid generator of whole scripts compared under rel.
func ScriptGen(rel equiv.Relation) *rapid.Generator[[]ops.Op] {
	return rapid.Custom(func(t *rapid.T) []ops.Op { return Draw(ids.NewRapidSource(t), rel) })
}

// RapidScripts returns the function that gives the script rapid draws for a
// seed: the same seed gives the same script on every run and every machine.
func RapidScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	gen := ScriptGen(rel)
	return func(seed uint64) []ops.Op { return gen.Example(int(seed)) }
}

// clone copies the shadow so that gopter's states are never shared.
func (s *Shadow) clone() *Shadow {
	c := *s
	segs := map[*segment]*segment{}
	cp := func(g *segment) *segment {
		if g == nil {
			return nil
		}
		if n, ok := segs[g]; ok {
			return n
		}
		n := *g
		segs[g] = &n
		return &n
	}
	c.segs, c.keys, c.atts = map[int]*segment{}, map[int32]*segment{}, map[int]*attachment{}
	for h, g := range s.segs {
		c.segs[h] = cp(g)
	}
	for k, g := range s.keys {
		c.keys[k] = cp(g)
	}
	for a, at := range s.atts {
		n := *at
		n.seg = cp(at.seg)
		c.atts[a] = &n
	}
	c.segOrder = append([]int(nil), s.segOrder...)
	c.attOrder = append([]int(nil), s.attOrder...)
	return &c
}

// Copy implements ids.Shadowed.
func (s *Shadow) Copy() ids.Shadowed { return s.clone() }

// GopterScripts returns the function that gives the script gopter's
// generators draw for a seed: a length, then one OpGen draw per step.
func GopterScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	return func(seed uint64) []ops.Op {
		p := gopter.DefaultGenParameters()
		p.Rng.Seed(int64(seed))
		n := 1 + ids.RandSource{Rng: p.Rng}.Intn(MaxLen, "length")
		state := NewShadow(rel)
		out := make([]ops.Op, 0, n)
		for range n {
			d := ids.OpGen(state)(p).Result.(ids.Drawn)
			out = append(out, d.Op)
			state = d.After.(*Shadow)
		}
		return out
	}
}
