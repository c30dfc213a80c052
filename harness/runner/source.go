package runner

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Source draws a run's scripts: script i is Next(ScriptSeed(Seed, i)).
// Next runs ahead of the comparison (drawing the next batch overlaps
// running this one), on a goroutine of its own.
type Source interface {
	Next(seed uint64) []ops.Op
}

// Learner is a Source's optional part: it is told what each script did on
// both sides (their outcomes, observations included; zero Outcomes for a
// script no side completed), in script order, so that what it draws next
// can follow what was seen (new coverage, slow kinds). Feedback and Next
// are called on one goroutine, and script i is drawn once the scripts
// before i-lag were told and no later one (lag: the scripts a run may
// have in flight, from Options.Batch and the pairs): what a Learner draws
// depends on the run's seed and options alone, not on the timing. A
// Learner's script is not its seed's alone, though: findings record no
// script seed for it.
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
