package ids

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/props/sides"
)

func newNaive(t testing.TB) ops.Impl     { return sides.Impl(t, "naive", "ids") }
func newOptimized(t testing.TB) ops.Impl { return sides.Impl(t, "optimized", "ids") }
func newKernel(t testing.TB) ops.Impl    { return sides.Impl(t, "kernel", "ids") }

var legacy = ops.Config{Options: map[string]string{"alloc": "legacy"}}

func TestTextRoundTrip(t *testing.T) {
	m, err := naive.New()
	require.NoError(t, err)
	rapid.Check(t, TextRoundTrip("ids", func(s Source) []ops.Op { return Draw(s, equiv.Exact) }, m))
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, bad := range []string{
		"subsystem ids\nget msg key=0x0 mode=0600\nfrobnicate msg\n",
		"rmid msg\n",
		"h1 = get msg key=0x1 mode=0600\nh1 = get msg key=0x2 mode=0600\n",
		"get msg key=12 mode=0600\n",
		"stat msg h1 -> key=0x1 mode=0600 owner=0 size=0 colour=red\n",
		"list sem -> [1:0x2 x]\n",
	} {
		_, err := ops.Parse("bad.ops", strings.NewReader(bad))
		require.Error(t, err, bad)
		require.Regexp(t, `^bad\.ops:\d+: `, err.Error())
		require.NotContains(t, err.Error(), "\n")
	}
}

func TestMachineNaiveOptimized(t *testing.T) {
	rapid.Check(t, Machine(Pair{A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact}))
}

func TestMachineLegacyRenamed(t *testing.T) {
	rapid.Check(t, Machine(Pair{A: newNaive(t), CfgA: legacy, B: newOptimized(t), Relation: equiv.IDsRenamed}))
}

func TestMachineOptimizedKernel(t *testing.T) {
	rapid.Check(t, Machine(Pair{A: newOptimized(t), B: newKernel(t), Relation: equiv.Exact}))
}

// The legacy allocator numbers ids differently; an exact comparison must find
// that and shrink it to a few operations.
func TestRunnerFindsAndShrinksLegacy(t *testing.T) {
	dir := t.TempDir()
	res, err := runner.Run(context.Background(), runner.Options{
		A:         runner.Side{Name: "naive:alloc=legacy", Impl: newNaive(t), Config: legacy},
		B:         runner.Side{Name: "optimized", Impl: newOptimized(t)},
		Subsystem: "ids", Relation: equiv.Exact, Generate: RapidScripts(equiv.Exact), Seed: 1, Checks: 200, Corpus: dir,
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

func TestRunnerSameSeedSameScripts(t *testing.T) {
	r1, r2 := RapidScripts(equiv.Exact), RapidScripts(equiv.Exact)
	g1, g2 := GopterScripts(equiv.Exact), GopterScripts(equiv.Exact)
	for seed := uint64(0); seed < 20; seed++ {
		require.Equal(t, r1(seed), r2(seed))
		require.Equal(t, g1(seed), g2(seed))
	}
	require.NotEqual(t, r1(1), r1(2))
}

func commandsFor(p Pair) *commands.ProtoCommands {
	return Commands(p, func() Shadowed { return NewShadow(p.Relation) }, nil)
}

func TestGopterCommands(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.Rng.Seed(1)
	props := gopter.NewProperties(params)
	props.Property("naive = optimized", commands.Prop(commandsFor(Pair{A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact})))
	props.Property("legacy = optimized up to renaming", commands.Prop(commandsFor(Pair{A: newNaive(t), CfgA: legacy, B: newOptimized(t), Relation: equiv.IDsRenamed})))
	props.TestingRun(t)
}

func TestGopterCommandsKernel(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.Rng.Seed(1)
	props := gopter.NewProperties(params)
	props.Property("optimized = kernel", commands.Prop(commandsFor(Pair{A: newOptimized(t), B: newKernel(t), Relation: equiv.Exact})))
	props.TestingRun(t)
}

// FuzzMaxLen bounds the scripts FuzzIDs draws, so that one input stays
// small and fast (about 400 bytes make a script of this length).
const FuzzMaxLen = 64

// FuzzIDs turns the fuzzer's bytes into a script (each byte one choice of
// the generator, see ByteSource; not rapid.MakeFuzz, whose 8 bytes per draw
// make inputs large and minimization slow), runs it on the naive and optimized models and
// on the live kernel (when a private IPC namespace can be had) and compares
// naive with optimized and optimized with the kernel exactly.
func FuzzIDs(f *testing.F) {
	n, o := newNaive(f), newOptimized(f)
	var k ops.Impl
	if m, err := kernel.New(); err == nil {
		k = ops.NewLocal(kernel.Info(), m)
		f.Cleanup(func() { _ = k.Close() })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &ByteSource{Data: data}
		focus := ops.IPCTypes[src.Intn(len(ops.IPCTypes), "focus")]
		script := Script(src, equiv.Exact, focus, src.Intn(2, "churn") == 0, 1+src.Intn(FuzzMaxLen, "length"))
		if err := CompareChain("ids", script, nil, n, o, k); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCorpusReplay replays every committed script: the implementations must
// agree with each other and with every expectation the script states.
func TestCorpusReplay(t *testing.T) {
	files, err := corpus.Files(filepath.Join("..", "..", "corpus"))
	require.NoError(t, err)
	pairs := map[string]Pair{"naive-optimized": {A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact}}
	if m, err := kernel.New(); err == nil {
		k := ops.NewLocal(kernel.Info(), m)
		t.Cleanup(func() { _ = k.Close() })
		pairs["optimized-kernel"] = Pair{A: newOptimized(t), B: k, Relation: equiv.Exact}
	} else {
		t.Logf("replaying on the models only: the live kernel needs a private IPC namespace: %v", err)
	}
	for _, file := range files {
		sc, err := corpus.Read(file)
		require.NoError(t, err)
		if sc.Subsystem != "ids" {
			continue
		}
		for name, p := range pairs {
			t.Run(filepath.Base(file)+"/"+name, func(t *testing.T) {
				a, b := runner.Side{Name: "A", Impl: p.A, Config: p.CfgA}, runner.Side{Name: "B", Impl: p.B, Config: p.CfgB}
				require.NoError(t, runner.Replay(context.Background(), sc, a, b, p.Relation))
			})
		}
	}
}
