package worst_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

func options(t *testing.T, sub, a, metric string, seed uint64) worst.Options {
	t.Helper()
	s, err := props.Lookup(sub)
	require.NoError(t, err)
	return worst.Options{
		Subsystem: sub,
		Draw: func(seed uint64) []ops.Op {
			return s.Draw(engine.RandSource{Rng: rand.New(rand.NewSource(int64(seed >> 1)))}, equiv.Exact)
		},
		A: sidestest.Subject(t, a), Metric: metric, Sizes: []int{8, 16, 32, 64}, Reps: 1,
		Candidates: 60, Budget: 10 * time.Minute, Seed: seed,
	}
}

// naiveVsOptimized is options of the naive model measured against the
// optimized one (B).
func naiveVsOptimized(t *testing.T, sub, metric string, seed uint64) worst.Options {
	t.Helper()
	o := options(t, sub, "naive", metric, seed)
	b := sidestest.Subject(t, "optimized")
	o.B = &b
	return o
}

// mustFind searches with o and requires that the search found a pattern;
// it returns the result and the found pattern's text.
func mustFind(t *testing.T, o worst.Options) (*worst.Result, string) {
	t.Helper()
	res, err := worst.Search(context.Background(), o)
	require.NoError(t, err)
	require.True(t, res.Found)
	return res, ops.FormatPattern(res.Best.Pattern)
}

// The same seed gives the same pattern and the same score for a model's
// counters; the search is not cut short by its budget.
func TestSearchIsDeterministic(t *testing.T) {
	t.Parallel()
	var found []string
	for range 2 {
		res, text := mustFind(t, options(t, "shm", "naive", "probes", 7))
		require.False(t, res.CutShort)
		require.GreaterOrEqual(t, res.Evaluated, 60)
		found = append(found, text+res.Best.Score.Fit.String())
	}
	require.Equal(t, found[0], found[1])
}

// Another seed may find another pattern, but the score of a pattern does
// not depend on the search: measuring the found one again gives it.
func TestScoreOfFoundPatternReproduces(t *testing.T) {
	t.Parallel()
	o := options(t, "ids", "naive", "", 3)
	res, text := mustFind(t, o)
	again, err := worst.Measure(context.Background(), o, res.Best.Pattern)
	require.NoError(t, err)
	require.Equal(t, res.Best.Score.Fit, again.Fit)
	p, err := ops.ParsePatternString(text)
	require.NoError(t, err, text)
	require.Equal(t, text, ops.FormatPattern(p))
}

// A budget of time that ends the search is said, never hidden.
func TestBudgetCutsShort(t *testing.T) {
	t.Parallel()
	o := options(t, "ids", "naive", "", 1)
	o.Candidates, o.Budget = worst.MaxCandidates, 300*time.Millisecond
	res, err := worst.Search(context.Background(), o)
	require.NoError(t, err)
	require.True(t, res.CutShort)
	require.Less(t, res.Evaluated, worst.MaxCandidates)
}

func TestOptionsAreChecked(t *testing.T) {
	t.Parallel()
	o := options(t, "ids", "naive", "", 1)
	o.Sizes = []int{8, 16}
	_, err := worst.Search(context.Background(), o)
	require.ErrorContains(t, err, "at least 3")
	o = options(t, "ids", "naive", "", 1)
	o.Candidates = 0
	_, err = worst.Search(context.Background(), o)
	require.ErrorContains(t, err, "candidates")
}
