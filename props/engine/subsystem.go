// Package engine turns one description of a subsystem (its generator, its
// invariants, its limits) into everything that drives implementations:
// rapid and gopter script sources for compare, the rapid state machine, the
// gopter commands, the go test -fuzz driver and the chain comparison used
// by property tests. Each props/<subsystem> package exports one Subsystem;
// props.Subsystems lists them all.
package engine

import (
	"github.com/leanovate/gopter"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Shadow is a subsystem's generator: its idea of the state a script has
// reached, which steers each choice toward what makes sense there (existing
// objects, stale ones, near-limit states) and toward deliberately invalid
// calls. It is never an oracle.
type Shadow interface {
	// Step draws one operation and advances the shadow by its expected effect.
	Step(src Source) ops.Op
	// Copy returns an independent copy (gopter keeps states apart).
	Copy() Shadow
}

// Subsystem describes one subsystem to the drivers.
type Subsystem struct {
	Name string
	// Doc is one line for help texts.
	Doc string
	// NewShadow returns the generator of one script; it may draw the
	// script's own parameters (swarm weights, the type it works on) from src.
	NewShadow func(src Source, rel equiv.Relation) Shadow
	// MinLen and MaxLen bound the length of a drawn script.
	MinLen, MaxLen int
	// FuzzMaxLen bounds the scripts one fuzz input draws, so that an input
	// stays small and fast.
	FuzzMaxLen int
	// Invariant checks what must hold of every final state (nil: nothing).
	Invariant func(ops.Snapshot) error
	// Relations are the equivalences its scripts can be compared under,
	// the default first.
	Relations []equiv.Relation
}

// Races reports whether an operation of the subsystem's scripts may end in
// several allowed ways (ops.SubsystemSpec.Races).
func (s Subsystem) Races() bool { return ops.SubsystemRaces(s.Name) }

// Draw draws a whole script: a length (short, medium or long), then steps
// from a fresh shadow.
func (s Subsystem) Draw(src Source, rel equiv.Relation) []ops.Op {
	sh := s.NewShadow(src, rel)
	return steps(sh, src, s.length(src))
}

// DrawFuzz draws the script of one fuzz input: short, so that inputs stay
// small and minimizing them quick.
func (s Subsystem) DrawFuzz(src Source) []ops.Op {
	sh := s.NewShadow(src, equiv.Exact)
	return steps(sh, src, max(s.MinLen, 1)+src.Intn(s.FuzzMaxLen, "length"))
}

func steps(sh Shadow, src Source, n int) []ops.Op {
	out := make([]ops.Op, n)
	for i := range out {
		out[i] = sh.Step(src)
	}
	return out
}

// length draws a script length: short two times in five, medium or long
// otherwise.
func (s Subsystem) length(src Source) int {
	lo := max(s.MinLen, 1)
	short := min(30, s.MaxLen)
	switch src.Intn(5, "length class") {
	case 0, 1:
		return lo + src.Intn(max(short-lo, 1), "length")
	case 2, 3:
		mid := max(s.MaxLen/3, short+1)
		return short + src.Intn(mid-short+1, "length")
	}
	return s.MaxLen/3 + src.Intn(s.MaxLen-s.MaxLen/3+1, "length")
}

// ScriptGen is the rapid generator of whole scripts compared under rel.
func (s Subsystem) ScriptGen(rel equiv.Relation) *rapid.Generator[[]ops.Op] {
	return rapid.Custom(func(t *rapid.T) []ops.Op { return s.Draw(NewRapidSource(t), rel) })
}

// RapidScripts returns the function that gives the script rapid draws for
// a seed: the same seed gives the same script on every run and machine.
func (s Subsystem) RapidScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	gen := s.ScriptGen(rel)
	return func(seed uint64) []ops.Op { return gen.Example(int(seed)) }
}

// GopterGen is the gopter generator of whole scripts compared under rel.
func (s Subsystem) GopterGen(rel equiv.Relation) gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		return gopter.NewGenResult(s.Draw(RandSource{Rng: p.Rng}, rel), gopter.NoShrinker)
	}
}

// GopterScripts returns the function that gives the script gopter's
// generator draws for a seed.
func (s Subsystem) GopterScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	gen := s.GopterGen(rel)
	return func(seed uint64) []ops.Op {
		p := gopter.DefaultGenParameters()
		p.Rng.Seed(int64(seed))
		return gen(p).Result.([]ops.Op)
	}
}

// Engines names the script sources compare can use.
var Engines = []string{"rapid", "gopter", "guided"}

// Source returns the script source of an engine: rapid's or gopter's
// scripts of each seed, or a Guided source (which follows the kernel
// coverage the sides report).
func (s Subsystem) Source(engine string, rel equiv.Relation) (runner.Source, bool) {
	if engine == "guided" {
		return s.Guided(rel), true
	}
	gen, ok := s.Scripts(engine, rel)
	if !ok {
		return nil, false
	}
	return runner.Seeded(gen), true
}

// Scripts returns the scripts of each seed of a seeded engine ("rapid" or
// "gopter").
func (s Subsystem) Scripts(engine string, rel equiv.Relation) (func(seed uint64) []ops.Op, bool) {
	switch engine {
	case "rapid":
		return s.RapidScripts(rel), true
	case "gopter":
		return s.GopterScripts(rel), true
	}
	return nil, false
}
