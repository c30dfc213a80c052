package ids

import (
	"math/rand"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// RapidSource draws from a rapid.T, so rapid records and shrinks every choice.
type RapidSource struct{ T *rapid.T }

// Intn implements Source.
func (r RapidSource) Intn(n int, label string) int {
	if n <= 1 {
		return 0
	}
	return rapid.IntRange(0, n-1).Draw(r.T, label)
}

// RandSource draws from a math/rand generator (gopter's GenParameters.Rng).
type RandSource struct{ Rng *rand.Rand }

// Intn implements Source.
func (r RandSource) Intn(n int, _ string) int {
	if n <= 1 {
		return 0
	}
	return r.Rng.Intn(n)
}

// ScriptGen is the rapid generator of whole scripts compared under rel.
func ScriptGen(rel equiv.Relation) *rapid.Generator[[]ops.Op] {
	return rapid.Custom(func(t *rapid.T) []ops.Op { return Draw(RapidSource{t}, rel) })
}

// RapidScripts returns the function that gives the script rapid draws for a
// seed: the same seed gives the same script on every run and every machine.
func RapidScripts(rel equiv.Relation) func(seed uint64) []ops.Op {
	gen := ScriptGen(rel)
	return func(seed uint64) []ops.Op { return gen.Example(int(seed)) }
}
