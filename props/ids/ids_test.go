package ids_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var sub = ids.Subsystem

// The checks every subsystem has (sidestest.Suite); against the kernel
// without the seq wrap (ids.NoWrap): one wrap costs seconds there.
func TestSuite(t *testing.T) {
	legacy := sidestest.Compared{A: "naive:alloc=legacy", B: "optimized", Rel: equiv.IDsRenamed}
	kernel := sidestest.Compared{A: "optimized", B: "kernel", Rel: equiv.Exact, Sub: &ids.NoWrap}
	sidestest.Suite{Sub: sub, RoundTrip: naive.New, Machines: []sidestest.Compared{sidestest.Models()[0], legacy, kernel},
		Commands: []sidestest.Compared{sidestest.Models()[0], legacy}}.Run(t)
}

// gopter's command sequences against the kernel, from a seed of their own.
func TestSuiteKernel(t *testing.T) {
	testkit.Long(t) // gopter's sequences against the kernel; TestSuite compares the kernel with rapid's
	kernel := sidestest.Compared{A: "optimized", B: "kernel", Rel: equiv.Exact, Sub: &ids.NoWrap}
	sidestest.Suite{Sub: sub, Machines: []sidestest.Compared{}, Commands: []sidestest.Compared{kernel}}.Run(t)
}

// The legacy allocator numbers ids differently; an exact comparison must find
// that and shrink it to a few operations.
func TestRunnerFindsAndShrinksLegacy(t *testing.T) {
	dir := t.TempDir()
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs:  []*runner.Pair{sidestest.Pair(t, sub, "naive:alloc=legacy", "optimized", equiv.Exact)},
		Source: runner.Seeded(sub.RapidScripts(equiv.Exact)), Seed: 1, Checks: 200, Corpus: dir,
	})
	require.NoError(t, err)
	require.Equal(t, 1, res.Divergences)
	require.Len(t, res.Scripts, 1)
	sc, err := corpus.Read(res.Scripts[0])
	require.NoError(t, err)
	require.LessOrEqual(t, len(sc.Steps), 4, ops.Format(sc))
	text, err := os.ReadFile(res.Scripts[0])
	require.NoError(t, err)
	require.Contains(t, string(text), "A: naive:alloc=legacy")
}

func TestSameSeedSameScripts(t *testing.T) {
	r1, r2 := sub.RapidScripts(equiv.Exact), sub.RapidScripts(equiv.Exact)
	g1, g2 := sub.GopterScripts(equiv.Exact), sub.GopterScripts(equiv.Exact)
	for seed := uint64(0); seed < 20; seed++ {
		require.Equal(t, r1(seed), r2(seed))
		require.Equal(t, g1(seed), g2(seed))
	}
	require.NotEqual(t, r1(1), r1(2))
}

// earlyWrap is the cyclic allocator with a seq that wraps one value early
// (from 65533 to 0): a fault only a script that reaches the wrap can see.
type earlyWrap struct{}

func (earlyWrap) Alloc(st *ipcns.AllocState, t ipcns.Table) (int, int, bool) {
	idx, seq, ok := ipcns.Cyclic.Alloc(st, t)
	if ok && seq == ops.SeqMax-1 {
		st.Seq, seq = 0, 0
	}
	return idx, seq, ok
}

// Generated scripts reach the seq wrap: among the scripts of a run's first
// few thousand seeds with default options, one tells the early-wrapping
// allocator from the right one. The scripts are drawn as runner.Run draws
// them and judged by its oracle, but what is found is not shrunk (which
// was most of this test's time, and is runner.Run's own business).
func TestGeneratedScriptsReachSeqWrap(t *testing.T) {
	mutant := runner.Side{Name: "earlywrap", Impl: ops.NewLocal(ops.Info{Name: "earlywrap", Subsystems: []string{"ids"}}, ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, earlyWrap{}))}
	p, err := sub.Pair(context.Background(), mutant, sidestest.Open(t, "optimized", sub), equiv.Exact)
	require.NoError(t, err)
	generate := sub.RapidScripts(equiv.Exact)
	const seed, checks, batch = 1, 20000, 256
	for start := 0; start < checks; start += batch {
		scripts := make([][]ops.Op, batch)
		for i := range scripts {
			scripts[i] = generate(runner.ScriptSeed(seed, start+i))
		}
		vs, err := p.Check(context.Background(), scripts)
		require.NoError(t, err)
		if i := slices.IndexFunc(vs, runner.Verdict.Diverged); i >= 0 {
			t.Logf("script %d of seed %d reaches the seq wrap", start+i, seed)
			return
		}
	}
	t.Fatalf("no script of %d reached the seq wrap", checks)
}

// FuzzIDs turns the fuzzer's bytes into a script (one byte a choice) and
// compares the implementations IPCFUZZ_IMPLS names (naive, optimized and,
// where it can run, the live kernel by default) each with the next.
func FuzzIDs(f *testing.F) {
	sub.Fuzz(f, sidestest.FromEnv(f, sub))
}

// The seq wrap of testdata/seq-wrap.ops gives every result it states on
// every built-in, the kernel included where it can run: once, since the
// wrap takes seconds there (the kernel properties above draw without it).
func TestSeqWrapOnEveryImplementation(t *testing.T) {
	sc, err := corpus.Read("testdata/seq-wrap.ops")
	require.NoError(t, err)
	for _, name := range []string{"naive", "optimized", "kernel"} {
		s, why := sidestest.Try(t, name, sub)
		if why != "" {
			t.Logf("left out: %s", why)
			continue
		}
		problems, err := runner.CheckStated(context.Background(), sc, s)
		require.NoError(t, err, name)
		require.Empty(t, problems, name)
	}
}
