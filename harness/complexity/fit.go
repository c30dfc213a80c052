// Package complexity turns measurements of a workload at several sizes into
// growth verdicts: a log-log least-squares exponent with a confidence
// interval from the repetitions, a complexity class, and a comparison across
// implementations. It also renders the results as a table (like the
// changelog of the 2021 sysvipc_find_ipc() patch), JSON, benchstat input and
// a log-log plot.
package complexity

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Fit is the growth of one cost series.
type Fit struct {
	Exponent float64    `json:"exponent"`
	CI       [2]float64 `json:"ci"`
	Class    string     `json:"class"`
	// Note explains a series that was not fitted (zero at every size, or at some).
	Note string `json:"note,omitempty"`
}

// Fitted reports whether the series had an exponent to fit.
func (f Fit) Fitted() bool { return f.Note == "" }

func (f Fit) String() string {
	if !f.Fitted() {
		return f.Note
	}
	return fmt.Sprintf("n^%.2f [%.2f, %.2f] %s", f.Exponent, f.CI[0], f.CI[1], f.Class)
}

// The classes, from the slowest growth to the fastest.
const (
	ClassConst    = "O(1)"
	ClassLog      = "O(log n)"
	ClassLinear   = "O(n)"
	ClassNLogN    = "O(n log n)"
	ClassQuad     = "O(n^2)"
	ClassWorse    = "worse than O(n^2)"
	ClassZero     = "zero"
	classNotFound = ""
)

var candidates = []struct {
	class string
	f     func(n float64) float64
}{
	{ClassConst, func(float64) float64 { return 1 }},
	{ClassLog, func(n float64) float64 { return math.Log(n) }},
	{ClassLinear, func(n float64) float64 { return n }},
	{ClassNLogN, func(n float64) float64 { return n * math.Log(n) }},
	{ClassQuad, func(n float64) float64 { return n * n }},
}

// FitSeries fits cost = c * n^e by least squares on (log n, log cost) over
// every repetition at every size. samples[i] holds the repetitions at
// sizes[i]. The interval is the 95% interval of the slope; the class is the
// candidate growth the interval holds (see classify).
func FitSeries(sizes []int, samples [][]float64) Fit {
	var xs, ys []float64
	zeroAt := []int{}
	for i, n := range sizes {
		zero := true
		for _, v := range samples[i] {
			if v > 0 {
				xs = append(xs, math.Log(float64(n)))
				ys = append(ys, math.Log(v))
				zero = false
			}
		}
		if zero {
			zeroAt = append(zeroAt, n)
		}
	}
	switch {
	case len(zeroAt) == len(sizes):
		return Fit{Class: ClassZero, Note: "0 at every size (nothing to fit)"}
	case len(zeroAt) > 0:
		return Fit{Note: fmt.Sprintf("0 at n=%v, not fitted", zeroAt)}
	case len(sizes) < 2:
		return Fit{Note: "one size only, not fitted"}
	}
	slope, se := ols(xs, ys)
	t := tQuantile(len(xs) - 2)
	ci := [2]float64{slope - t*se, slope + t*se}
	return Fit{Exponent: slope, CI: ci, Class: classify(sizes, slope, ci)}
}

// classify names the growth: the candidates whose own log-log slope over
// these sizes (1.12 for n log n over 1k..32k, 0.12 for log n) lies inside the
// interval (as printed, to two decimals); "O(log n) to O(n)" when the
// interval holds several. When it holds none, it names the two candidates
// whose slopes bracket it ("between O(n) and O(n log n)"), or "below O(1)",
// or ClassWorse above O(n^2). So the class never contradicts the exponent
// beside it, nor claims more than the measurements show.
func classify(sizes []int, slope float64, ci [2]float64) string {
	if ci[0] > 2.5 || (slope > 2.5 && ci[0] > 2.2) {
		return ClassWorse
	}
	xs := make([]float64, len(sizes))
	for i, n := range sizes {
		xs[i] = math.Log(float64(n))
	}
	const printed = 0.005 // the interval is shown to two decimals
	var inside []string
	below, above := classNotFound, classNotFound
	for _, c := range candidates {
		ys := make([]float64, len(sizes))
		for i, n := range sizes {
			ys[i] = math.Log(c.f(float64(n)))
		}
		own, _ := ols(xs, ys)
		switch {
		case own >= ci[0]-printed && own <= ci[1]+printed:
			inside = append(inside, c.class)
		case own < ci[0]:
			below = c.class
		case above == classNotFound:
			above = c.class
		}
	}
	worse := ""
	if above == classNotFound && ci[1] > 2.5 {
		worse = " or worse" // the interval reaches beyond n^2.5
	}
	switch {
	case len(inside) == 1:
		return inside[0] + worse
	case len(inside) > 1:
		return inside[0] + " to " + inside[len(inside)-1] + worse
	case above == classNotFound:
		return ClassWorse
	case below == classNotFound:
		return "below " + above
	}
	return "between " + below + " and " + above
}

// ols returns the least-squares slope of y on x (gonum's
// stat.LinearRegression) and its standard error.
func ols(xs, ys []float64) (slope, se float64) {
	if len(xs) < 2 || stat.Variance(xs, nil) == 0 {
		return 0, 0
	}
	alpha, beta := stat.LinearRegression(xs, ys, nil, false)
	n := float64(len(xs))
	if n <= 2 {
		return beta, 0
	}
	var rss float64
	for i := range xs {
		e := ys[i] - (alpha + beta*xs[i])
		rss += e * e
	}
	sxx := stat.Variance(xs, nil) * (n - 1)
	return beta, math.Sqrt(rss / (n - 2) / sxx)
}

// tQuantile is the two-sided 95% quantile of Student's t with df degrees of
// freedom.
func tQuantile(df int) float64 {
	if df <= 0 {
		return math.Inf(1)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// Median returns the median of v (0 for an empty v).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
