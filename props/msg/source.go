package msg

import (
	"math/rand"

	"github.com/leanovate/gopter"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ids "github.com/ipcfuzz/ipcfuzz/props/ids"
)

// ScriptGen is the rapid generator of whole scripts.
func ScriptGen() *rapid.Generator[[]ops.Op] {
	return rapid.Custom(func(t *rapid.T) []ops.Op { return Draw(ids.NewRapidSource(t)) })
}

// RapidScripts returns the function that gives the script rapid draws for a
// seed: the same seed gives the same script everywhere.
func RapidScripts() func(seed uint64) []ops.Op {
	gen := ScriptGen()
	return func(seed uint64) []ops.Op { return gen.Example(int(seed)) }
}

// Copy implements ids.Shadowed.
func (s *Shadow) Copy() ids.Shadowed { return s.clone() }

func (s *Shadow) clone() *Shadow {
	c := &Shadow{nextHandle: s.nextHandle}
	for _, q := range s.queues {
		n := *q
		n.msgs = append([]int64(nil), q.msgs...)
		n.mtypes = append([]int64(nil), q.mtypes...)
		c.queues = append(c.queues, &n)
	}
	for t, sl := range s.asleep {
		if sl != nil {
			n := *sl
			c.asleep[t] = &n
		}
	}
	return c
}

// GopterScripts returns the function that gives the script gopter's
// generators draw for a seed.
func GopterScripts() func(seed uint64) []ops.Op {
	return func(seed uint64) []ops.Op {
		p := gopter.DefaultGenParameters()
		p.Rng = rand.New(rand.NewSource(int64(seed)))
		n := 4 + ids.RandSource{Rng: p.Rng}.Intn(MaxLen-3, "length")
		state := NewShadow()
		out := make([]ops.Op, 0, n)
		for range n {
			d := ids.OpGen(state)(p).Result.(ids.Drawn)
			out = append(out, d.Op)
			state = d.After.(*Shadow)
		}
		return out
	}
}
