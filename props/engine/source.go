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

// ByteSource draws from fuzzer-chosen bytes, for go test -fuzz: a choice
// among n options reads as many bytes as it takes to count to n (one byte
// up to 256 options, two up to 65536, three up to 2^24, four up to 2^32,
// ...), big-endian, modulo n; past the end every byte is 0. Every value of
// every range is some input's choice (a byte string of the value itself),
// every input is a valid script, small inputs make small scripts, and a
// byte the fuzzer flips changes one choice.
type ByteSource struct {
	Data []byte
	pos  int
}

// Intn implements Source.
func (b *ByteSource) Intn(n int, _ string) int {
	if n <= 1 {
		return 0
	}
	var v uint64
	span := uint64(1) // 256^(bytes read): the values v can hold
	for k := 0; k < 8 && span < uint64(n); k++ {
		v = v<<8 | uint64(b.next())
		span <<= 8
	}
	return int(v % uint64(n))
}

func (b *ByteSource) next() int {
	if b.pos >= len(b.Data) {
		return 0
	}
	b.pos++
	return int(b.Data[b.pos-1])
}

// Live is the objects of a shadow that are alive, in their order.
func Live[T any](objs []T, alive func(T) bool) []T {
	var out []T
	for _, o := range objs {
		if alive(o) {
			out = append(out, o)
		}
	}
	return out
}

// Pick draws one element of pool.
func Pick[T any](src Source, pool []T, label string) T {
	return pool[src.Intn(len(pool), label)]
}

// OneIn reports true about once in 2^k draws, under every engine: it is k
// fair coins, all of which must come up 1. A single draw of Intn(2^k) == c
// would not do: rapid favours the smallest and largest values of a range,
// so a value in the middle of a large range comes out several times less
// often than its share (1 of 500 comes out about 1 in 1800), while its coins
// are close to fair.
func OneIn(src Source, k int, label string) bool {
	for range k {
		if src.Intn(2, label) == 0 {
			return false
		}
	}
	return true
}
