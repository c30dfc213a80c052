package runner

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Source draws a run's scripts: script i is Next(ScriptSeed(Seed, i)).
// Next runs ahead of the comparison (drawing the next batch overlaps
// running this one), on a goroutine of its own.
type Source interface {
	Next(seed uint64) []ops.Op
}

// Learner is a Source's optional part: it is told what each compared
// script did on both sides (their outcomes, observations included), in
// script order, so that what it draws next can follow what was seen (new
// coverage, slow kinds). Feedback runs on another goroutine than Next;
// the Learner synchronizes them. Since a script then depends on the
// feedback that reached it before it was drawn, a Learner's script is not
// its seed's alone: findings record no script seed for it.
type Learner interface {
	Source
	Feedback(script []ops.Op, outs [2]ops.Outcome)
}

// Seeded is a Source of scripts drawn from their seed alone (the rapid
// and gopter generators of props/engine): deterministic, and it takes no
// feedback.
type Seeded func(seed uint64) []ops.Op

// Next implements Source.
func (f Seeded) Next(seed uint64) []ops.Op { return f(seed) }

// seeded reports whether s draws each script from its seed alone, so that
// the seed regenerates it.
func seeded(s Source) bool {
	_, learns := s.(Learner)
	return s != nil && !learns
}
