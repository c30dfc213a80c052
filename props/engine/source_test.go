package engine

import (
	"math/rand/v2"
	"testing"
)

// width is how many bytes a choice among n reads: the fewest k with 256^k >= n.
func width(n int) int {
	k := 0
	for span := 1; span < n; span <<= 8 {
		k++
	}
	return k
}

// reads checks the choice among n that the bytes of v (big-endian, width(n)
// of them) make, followed by the next choice among 256, which must read
// the byte after them (0xa5).
func reads(t *testing.T, n, v int) {
	t.Helper()
	k := width(n)
	data := make([]byte, k+1)
	for i := range k {
		data[k-1-i] = byte(v >> (8 * i))
	}
	data[k] = 0xa5
	src := &ByteSource{Data: data}
	if got := src.Intn(n, ""); got != v {
		t.Fatalf("Intn(%d) of the bytes % x = %d, want %d", n, data[:k], got, v)
	}
	if next := src.Intn(256, ""); next != 0xa5 {
		t.Fatalf("Intn(%d) read %d bytes, want %d", n, src.pos-1, k)
	}
}

// Every value of [0, n) is the choice of some input, for every n from 1 to
// 2^32: all values of every n up to 2^10, and for larger n the ends, the
// middle and a spread of values between (the bytes of the value itself).
// A choice among 257 to 511 once read a single byte and could never be
// more than 255.
func TestByteSourceReachesEveryValue(t *testing.T) {
	for n := 1; n <= 1<<10; n++ {
		for v := range n {
			reads(t, n, v)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1<<10 + 1, 2047, 2048, 2049, 4095, 4096, 4097, 65535, 65536, 65537, 1<<20 + 3, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1<<31 - 1, 1 << 31, 1<<31 + 7, 1<<32 - 1, 1 << 32} {
		for _, v := range []int{0, 1, 2, 255, 256, n / 3, n / 2, n - 2, n - 1} {
			if v < n {
				reads(t, n, v)
			}
		}
		for range 2000 {
			reads(t, n, r.IntN(n))
		}
	}
}

// Random inputs draw close to uniformly: each of 500 values (what the ids
// generator's old seq-wrap choice used) comes out within half and one and
// a half times its share.
func TestByteSourceIsNearUniform(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{3, 257, 500, 1000} {
		counts := make([]int, n)
		const draws = 400_000
		data := make([]byte, 2*draws)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		src := &ByteSource{Data: data}
		for range draws {
			counts[src.Intn(n, "")]++
		}
		share := draws / n
		for v, c := range counts {
			if c < share/2 || c > share*3/2 {
				t.Fatalf("Intn(%d): value %d came out %d times in %d draws, its share is %d", n, v, c, draws, share)
			}
		}
	}
}
