package shm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/props/sides"
)

func newNaive(t testing.TB) ops.Impl     { return sides.Impl(t, "naive", "shm") }
func newOptimized(t testing.TB) ops.Impl { return sides.Impl(t, "optimized", "shm") }
func newKernel(t testing.TB) ops.Impl    { return sides.Impl(t, "kernel", "shm") }

func TestTextRoundTrip(t *testing.T) {
	m, err := naive.New()
	require.NoError(t, err)
	rapid.Check(t, ids.TextRoundTrip("shm", func(s ids.Source) []ops.Op { return Draw(s, equiv.Exact) }, m))
}

// The generator must reach every situation the subsystem is about.
func TestGeneratorReaches(t *testing.T) {
	want := map[string]bool{}
	note := func(k string) { want[k] = true }
	m, err := optimized.New()
	require.NoError(t, err)
	gen := RapidScripts(equiv.Exact)
	for seed := uint64(0); seed < 300; seed++ {
		script := gen(seed)
		out, err := ops.Run(m, ops.Config{}, script)
		require.NoError(t, err)
		tasks := map[uint8]bool{}
		for i, op := range script {
			r := out.Results[i]
			switch {
			case op.Kind == ops.KindShmat && r.Err == ops.OK:
				tasks[op.Task] = true
				if len(tasks) >= 2 {
					note("attach by several tasks")
				}
			case op.Kind == ops.KindExit:
				note("exit")
			case op.Kind == ops.KindRmidForced && op.Value == 1:
				note("shm_rmid_forced 1")
			case op.Kind == ops.KindShmctl && op.Cmd == ops.ShmLock && r.Err == ops.EPERM:
				note("SHM_LOCK EPERM")
			case op.Kind == ops.KindShmctl && op.Cmd == ops.ShmLock && r.Err == ops.OK && op.As != 0:
				note("SHM_LOCK as owner")
			case op.Kind == ops.KindShmctl && op.Cmd == ops.ShmIPCSet && r.Err == ops.OK:
				note("IPC_SET")
			case op.Kind == ops.KindShmctl && op.Cmd == ops.ShmStat && r.Err == ops.OK:
				note("SHM_STAT")
			case op.Kind == ops.KindShmctl && (op.Cmd == ops.ShmInfoCmd || op.Cmd == ops.ShmIPCInfo) && r.Err == ops.OK && r.ID > 0:
				note("*_INFO > 0")
			case op.Kind == ops.KindShmctl && r.Row.Mode&ops.ShmDest != 0:
				note("SHM_DEST seen")
			case op.Kind == ops.KindList && op.Rows && op.Type == ops.Shm:
				for _, row := range r.Rows {
					if row.Mode&ops.ShmDest != 0 {
						note("SHM_DEST seen")
					}
				}
			}
		}
	}
	for _, k := range []string{"attach by several tasks", "exit", "shm_rmid_forced 1", "SHM_LOCK EPERM", "SHM_LOCK as owner", "IPC_SET", "SHM_STAT", "*_INFO > 0", "SHM_DEST seen"} {
		require.True(t, want[k], "no script of 300 reached %q", k)
	}
}

func TestMachineNaiveOptimized(t *testing.T) {
	rapid.Check(t, Machine(ids.Pair{A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact}))
}

func TestMachineOptimizedKernel(t *testing.T) {
	k := newKernel(t)
	rapid.Check(t, Machine(ids.Pair{A: newOptimized(t), B: k, Relation: equiv.Exact}))
}

// tabled is a model whose tables can be inspected.
type tabled interface {
	ops.Model
	Table(ops.IPCType) ipcns.Table
}

// After every operation of random shm and ids scripts, each table's max_idx
// is its highest live idx, and the optimized listing (the 6.1 walk) equals
// the naive one (the quadratic walk of <= 5.14).
func TestListingAndMaxIdx(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var script []ops.Op
		if rapid.Bool().Draw(t, "ids") {
			script = ids.Draw(ids.NewRapidSource(t), equiv.Exact)
		} else {
			script = Draw(ids.NewRapidSource(t), equiv.Exact)
		}
		mn, _ := naive.New()
		mo, _ := optimized.New()
		n, o := mn.(tabled), mo.(tabled)
		hn, ho := ops.Handles{}, ops.Handles{}
		for i, op := range script {
			rn, err := n.Apply(hn.Resolve(op))
			require.NoError(t, err)
			ro, err := o.Apply(ho.Resolve(op))
			require.NoError(t, err)
			hn.Record(op, rn)
			ho.Record(op, ro)
			for _, typ := range ops.IPCTypes {
				ln, lo := n.Table(typ).Listing(), o.Table(typ).Listing()
				if len(ln) != len(lo) {
					t.Fatalf("after op %d (%s): %s listings have %d and %d objects", i+1, ops.FormatOp(op), typ, len(ln), len(lo))
				}
				for j := range ln {
					if ln[j].ID() != lo[j].ID() || ln[j].Key != lo[j].Key {
						t.Fatalf("after op %d (%s): %s listings differ at %d", i+1, ops.FormatOp(op), typ, j)
					}
				}
				for name, m := range map[string]tabled{"naive": n, "optimized": o} {
					tb := m.Table(typ)
					want := -1
					for _, x := range tb.Listing() {
						want = max(want, x.Idx)
					}
					if got := tb.MaxIdx(); got != want {
						t.Fatalf("after op %d (%s): %s %s max_idx %d, highest live idx %d", i+1, ops.FormatOp(op), name, typ, got, want)
					}
				}
			}
		}
	})
}

func commandsFor(p ids.Pair) *commands.ProtoCommands {
	return ids.Commands(p, func() ids.Shadowed { return NewShadow(p.Relation) }, CheckInvariants)
}

func TestGopterCommands(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.Rng.Seed(1)
	props := gopter.NewProperties(params)
	props.Property("naive = optimized", commands.Prop(commandsFor(ids.Pair{A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact})))
	props.Property("optimized = kernel", commands.Prop(commandsFor(ids.Pair{A: newOptimized(t), B: newKernel(t), Relation: equiv.Exact})))
	props.TestingRun(t)
}

// FuzzMaxLen bounds the scripts FuzzShm draws, so that one input stays
// small and fast.
const FuzzMaxLen = 64

// FuzzShm turns the fuzzer's bytes into a script (each byte one choice of
// the generator, see ids.ByteSource), runs it on the naive and optimized
// models and on the live kernel (when a private IPC namespace can be had),
// checks the shm invariants on every final state and compares naive with
// optimized and optimized with the kernel exactly.
func FuzzShm(f *testing.F) {
	n, o := newNaive(f), newOptimized(f)
	var k ops.Impl
	if m, err := kernel.New(); err == nil {
		k = ops.NewLocal(kernel.Info(), m)
		f.Cleanup(func() { _ = k.Close() })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &ids.ByteSource{Data: data}
		script := Script(src, equiv.Exact, 1+src.Intn(FuzzMaxLen, "length"))
		if err := ids.CompareChain("shm", script, CheckInvariants, n, o, k); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCorpusReplay replays every committed shm script: the implementations
// must agree with each other and with every expectation the script states.
func TestCorpusReplay(t *testing.T) {
	files, err := corpus.Files(filepath.Join("..", "..", "corpus"))
	require.NoError(t, err)
	pairs := map[string]ids.Pair{"naive-optimized": {A: newNaive(t), B: newOptimized(t), Relation: equiv.Exact}}
	if m, err := kernel.New(); err == nil {
		k := ops.NewLocal(kernel.Info(), m)
		t.Cleanup(func() { _ = k.Close() })
		pairs["optimized-kernel"] = ids.Pair{A: newOptimized(t), B: k, Relation: equiv.Exact}
	} else {
		t.Logf("replaying on the models only: the live kernel needs a private IPC namespace: %v", err)
	}
	found := 0
	for _, file := range files {
		sc, err := corpus.Read(file)
		require.NoError(t, err)
		if sc.Subsystem != "shm" {
			continue
		}
		found++
		for name, p := range pairs {
			t.Run(filepath.Base(file)+"/"+name, func(t *testing.T) {
				a, b := runner.Side{Name: "A", Impl: p.A, Config: p.CfgA}, runner.Side{Name: "B", Impl: p.B, Config: p.CfgB}
				require.NoError(t, runner.Replay(context.Background(), sc, a, b, p.Relation))
			})
		}
	}
	require.NotZero(t, found, "no shm scripts under corpus/")
}
