package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Guided draws scripts that go where the kernel has not been: a script is
// drawn from choice bytes (ByteSource, so that any bytes make a valid
// script and a changed byte changes one choice), and the bytes of every
// script that reached a kernel program counter, or a step from one to the
// next, that no script before it had (ops.Observation.PCs, from a KCOV
// side) are kept; most later scripts are one of them mutated as a fuzzer
// mutates its inputs (bytes changed, inserted, removed, copied, spliced
// with another kept one), the rest fresh random bytes.
//
// It is a runner.Learner: the runner tells it what each script did at a
// fixed lag, on the goroutine that draws, so a guided run is repeatable
// from its seed. Where no side reports program counters nothing is kept
// and every script is fresh.
type Guided struct {
	// Within, when set, says which program counters count (those of the
	// covered files: cover.Within); the others are the kernel's own
	// moods (a slab refilled, a lock contended) more than the script's.
	Within func(pc uint64) bool

	sub Subsystem
	rel equiv.Relation
	// drawn: the bytes of each script drawn and not yet told of, in order.
	drawn [][]byte
	kept  [][]byte
	seen  map[uint64]struct{} // program counters and steps reached so far
	told  int
}

// Guided tuning: the bytes of a fresh script, the most bytes a mutation
// grows to, and the most scripts kept (later ones replace earlier ones in
// turn).
const (
	guidedFreshBytes = 4096
	guidedMaxBytes   = 8192
	guidedMaxKept    = 2048
)

// GuidedBatch is a guided run's default batch (scripts per plugin call):
// the runner tells the source what a script reached once the scripts in
// flight before it came back, and smaller batches tell it sooner.
const GuidedBatch = 32

// Guided returns the guided source of s's scripts compared under rel.
func (s Subsystem) Guided(rel equiv.Relation) *Guided {
	return &Guided{sub: s, rel: rel, seen: map[uint64]struct{}{}}
}

var _ runner.Learner = (*Guided)(nil)

// Next implements runner.Source: one script in four is fresh (all of them
// while nothing is kept), the others a mutation of a kept one.
func (g *Guided) Next(seed uint64) []ops.Op {
	rng := rand.New(rand.NewPCG(seed, 0x6775696465640a))
	var data []byte
	if len(g.kept) == 0 || rng.IntN(4) == 0 {
		data = randomBytes(rng, guidedFreshBytes)
	} else {
		data = g.mutate(rng, g.kept[rng.IntN(len(g.kept))])
	}
	g.drawn = append(g.drawn, data)
	return g.sub.Draw(&ByteSource{Data: data}, g.rel)
}

// Feedback implements runner.Learner: the script's bytes are kept when
// either side reached a program counter, or went from one to another, that
// no script before it had.
func (g *Guided) Feedback(_ []ops.Op, outs [2]ops.Outcome) {
	if len(g.drawn) == 0 {
		return // not one of ours (cannot happen: told in drawing order)
	}
	data := g.drawn[0]
	g.drawn = g.drawn[1:]
	g.told++
	fresh := false
	for _, out := range outs {
		for _, ob := range out.Observed {
			var prev uint64
			for _, pc := range ob.PCs { // kernel addresses: bit 63 set; steps: clear
				if g.Within != nil && !g.Within(pc) {
					continue
				}
				for _, k := range [2]uint64{pc, (prev*0x9e3779b97f4a7c15 ^ pc) &^ (1 << 63)} {
					if _, ok := g.seen[k]; !ok {
						g.seen[k] = struct{}{}
						fresh = true
					}
				}
				prev = pc
			}
		}
	}
	if !fresh {
		return
	}
	if len(g.kept) < guidedMaxKept {
		g.kept = append(g.kept, data)
	} else {
		g.kept[g.told%guidedMaxKept] = data
	}
}

// Summary is one line on what the run followed.
func (g *Guided) Summary() string {
	if len(g.seen) == 0 {
		return "--engine guided: no side reported kernel program counters (no KCOV; ci/kernel.sh --cover builds a kernel with it), so every script was fresh"
	}
	return fmt.Sprintf("--engine guided: %d kernel program counters and steps between two reached; %d scripts kept for reaching new ones", len(g.seen), len(g.kept))
}

// Kept is how many scripts' bytes are kept.
func (g *Guided) Kept() int { return len(g.kept) }

// Reached is how many program counters and steps between two the scripts
// told of reached.
func (g *Guided) Reached() int { return len(g.seen) }

// mutate returns a changed copy of data: one to three of a fuzzer's byte
// mutations.
func (g *Guided) mutate(rng *rand.Rand, data []byte) []byte {
	out := slices.Clone(data)
	for range 1 + rng.IntN(3) {
		out = g.mutateOnce(rng, out)
	}
	if len(out) > guidedMaxBytes {
		out = out[:guidedMaxBytes]
	}
	return out
}

func (g *Guided) mutateOnce(rng *rand.Rand, b []byte) []byte {
	if len(b) == 0 {
		return randomBytes(rng, 16)
	}
	i := rng.IntN(len(b))
	n := 1 + rng.IntN(min(16, len(b)-i))
	switch rng.IntN(6) {
	case 0: // change one byte
		b[i] = byte(rng.Uint32())
	case 1: // change a run of bytes
		for k := i; k < i+n; k++ {
			b[k] = byte(rng.Uint32())
		}
	case 2: // insert random bytes
		b = slices.Insert(b, i, randomBytes(rng, n)...)
	case 3: // remove a run of bytes
		b = slices.Delete(b, i, i+n)
	case 4: // copy a run of bytes elsewhere
		run := slices.Clone(b[i : i+n])
		b = slices.Insert(b, rng.IntN(len(b)+1), run...)
	case 5: // splice: this one's start, another kept one's end
		other := g.kept[rng.IntN(len(g.kept))]
		j := rng.IntN(len(other) + 1)
		b = append(b[:i:i], other[j:]...)
	}
	return b
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
