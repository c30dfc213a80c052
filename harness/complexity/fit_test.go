package complexity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var ladder = []int{1024, 2048, 4096, 8192, 16384, 32768}

// synthetic draws reps noisy samples of cost(n) at every size, with
// multiplicative noise of up to ±noise.
func synthetic(seed uint64, cost func(float64) float64, noise float64, reps int) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([][]float64, len(ladder))
	for i, n := range ladder {
		for range reps {
			out[i] = append(out[i], cost(float64(n))*(1+noise*(2*r.Float64()-1)))
		}
	}
	return out
}

func TestClassifierNamesSyntheticCosts(t *testing.T) {
	cases := []struct {
		class string
		cost  func(float64) float64
		exp   float64
	}{
		{ClassConst, func(float64) float64 { return 300 }, 0},
		{ClassLog, func(n float64) float64 { return 50 * math.Log(n) }, 0.15},
		{ClassLinear, func(n float64) float64 { return 3 * n }, 1},
		{ClassNLogN, func(n float64) float64 { return 0.5 * n * math.Log(n) }, 1.13},
		{ClassQuad, func(n float64) float64 { return 0.01 * n * n }, 2},
		{ClassWorse, func(n float64) float64 { return 1e-6 * n * n * n }, 3},
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= 20; seed++ {
			f := FitSeries(ladder, synthetic(seed, c.cost, 0.05, 5))
			require.True(t, f.Fitted(), c.class)
			require.Equal(t, c.class, f.Class, "seed %d: %s", seed, f)
			require.InDelta(t, c.exp, f.Exponent, 0.1, "seed %d", seed)
			require.LessOrEqual(t, f.CI[0], f.Exponent)
			require.GreaterOrEqual(t, f.CI[1], f.Exponent)
		}
	}
}

func TestFitIntervalCoversTheTruth(t *testing.T) {
	covered := 0
	for seed := uint64(1); seed <= 100; seed++ {
		f := FitSeries(ladder, synthetic(seed, func(n float64) float64 { return n }, 0.2, 3))
		if f.CI[0] <= 1 && 1 <= f.CI[1] {
			covered++
		}
	}
	require.GreaterOrEqual(t, covered, 85, "a 95%% interval should cover the true exponent most of the time")
}

func TestZeroSeriesAreNotFitted(t *testing.T) {
	zero := [][]float64{{0}, {0}, {0}}
	f := FitSeries([]int{16, 32, 64}, zero)
	require.False(t, f.Fitted())
	require.Equal(t, ClassZero, f.Class)
	require.Contains(t, f.String(), "0 at every size")

	f = FitSeries([]int{16, 32, 64}, [][]float64{{0}, {3}, {9}})
	require.False(t, f.Fitted())
	require.Contains(t, f.Note, "n=[16]")
}

// A class is named only when the interval (as printed) holds its slope;
// otherwise the two classes around the interval are named.
func TestClassNeverClaimsMoreThanTheInterval(t *testing.T) {
	sizes := []int{16, 32, 64, 128, 256}
	own := map[string]float64{}
	for _, c := range candidates {
		xs, ys := make([]float64, len(sizes)), make([]float64, len(sizes))
		for i, n := range sizes {
			xs[i], ys[i] = math.Log(float64(n)), math.Log(c.f(float64(n)))
		}
		own[c.class], _ = ols(xs, ys)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		lo := 2.6 * r.Float64()
		ci := [2]float64{lo, lo + 0.3*r.Float64()}
		class := classify(sizes, (ci[0]+ci[1])/2, ci)
		for name, slope := range own {
			class := strings.TrimSuffix(class, " or worse")
			if class == name || strings.HasPrefix(class, name+" to ") || strings.HasSuffix(class, " to "+name) {
				require.True(t, slope >= ci[0]-0.005 && slope <= ci[1]+0.005, "%s claimed for %v (its slope %.3f)", class, ci, slope)
			}
		}
		if strings.HasPrefix(class, "between ") {
			require.NotContains(t, class, " to ")
		}
	}
	require.Equal(t, "between O(n) and O(n log n)", classify(sizes, 1.08, [2]float64{1.06, 1.10}))
	require.Equal(t, ClassQuad, classify(sizes, 2, [2]float64{2, 2}))
	require.Equal(t, "O(n^2) or worse", classify(sizes, 2.5, [2]float64{1.47, 3.53}))
}
