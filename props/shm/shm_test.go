package shm_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/props/shm"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var sub = shm.Subsystem

// The checks every subsystem has (sidestest.Suite).
func TestSuite(t *testing.T) { sidestest.Suite{Sub: sub, RoundTrip: naive.New}.Run(t) }

// The generator must reach every situation the subsystem is about.
func TestGeneratorReaches(t *testing.T) {
	want := map[string]bool{}
	note := func(k string) { want[k] = true }
	m, err := optimized.New()
	require.NoError(t, err)
	gen := sub.RapidScripts(equiv.Exact)
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
			script = ids.Subsystem.Draw(engine.NewRapidSource(t), equiv.Exact)
		} else {
			script = sub.Draw(engine.NewRapidSource(t), equiv.Exact)
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

// FuzzShm turns the fuzzer's bytes into a script (one byte a choice),
// checks the shm invariants on every final state and compares the
// implementations IPCFUZZ_IMPLS names (naive, optimized and, where it can
// run, the live kernel by default) each with the next.
func FuzzShm(f *testing.F) {
	sub.Fuzz(f, sidestest.FromEnv(f, sub))
}
