package engine

import (
	"math/rand"

	"pgregory.net/rapid"
)

// Source is where a generator's choices come from: rapid's *T, gopter's
// random generator, or the bytes of go test -fuzz. Intn returns a value in
// [0, n); label names the choice for engines that log their draws.
type Source interface {
	Intn(n int, label string) int
}

// RapidSource draws from a rapid.T, so rapid records and shrinks every choice.
// Make one with NewRapidSource: it keeps the generators it made, since
// building a rapid generator costs more than drawing from it.
type RapidSource struct {
	T    *rapid.T
	gens map[int]*rapid.Generator[int]
}

// NewRapidSource returns a source drawing from t.
func NewRapidSource(t *rapid.T) RapidSource {
	return RapidSource{T: t, gens: map[int]*rapid.Generator[int]{}}
}

// Intn implements Source.
func (r RapidSource) Intn(n int, label string) int {
	if n <= 1 {
		return 0
	}
	g := r.gens[n]
	if g == nil {
		g = rapid.IntRange(0, n-1)
		if r.gens != nil {
			r.gens[n] = g
		}
	}
	return g.Draw(r.T, label)
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

// ByteSource draws from fuzzer-chosen bytes, for go test -fuzz: one byte per
// choice among up to 256 options, two bytes for more; past the end every
// choice is 0. Every input is a valid script, small inputs make small
// scripts, and a byte the fuzzer flips changes one choice.
type ByteSource struct {
	Data []byte
	pos  int
}

// Intn implements Source.
func (b *ByteSource) Intn(n int, _ string) int {
	if n <= 1 {
		return 0
	}
	v := 0
	for width := n; width > 1; width >>= 8 {
		v = v<<8 | b.next()
	}
	return v % n
}

func (b *ByteSource) next() int {
	if b.pos >= len(b.Data) {
		return 0
	}
	b.pos++
	return int(b.Data[b.pos-1])
}

// Pick draws one element of pool.
func Pick[T any](src Source, pool []T, label string) T {
	return pool[src.Intn(len(pool), label)]
}
