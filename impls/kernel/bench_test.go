//go:build linux && amd64

package kernel

import (
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// BenchmarkHandoff is the cost of one round trip to the worker thread with no
// syscall in it: the floor under every op.
func BenchmarkHandoff(b *testing.B) {
	m := newModel(b)
	for b.Loop() {
		m.n.w.Run(func() {})
	}
}

// BenchmarkReset is one op (so the namespace is dirty) plus a Reset, which
// unshares a new IPC namespace.
func BenchmarkReset(b *testing.B) {
	m := newModel(b)
	op := ops.Op{Kind: ops.KindList, Type: ops.Msg}
	for b.Loop() {
		if _, err := m.Apply(op); err != nil {
			b.Fatal(err)
		}
		if err := m.Reset(ops.Config{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetRmid(b *testing.B) {
	for _, typ := range ops.IPCTypes {
		b.Run(typ.String(), func(b *testing.B) {
			m := newModel(b)
			for b.Loop() {
				r, err := m.Apply(private(typ))
				if err != nil || r.Err != ops.OK {
					b.Fatal(err, r.Err)
				}
				if r, err = m.Apply(rmid(typ, r.ID)); err != nil || r.Err != ops.OK {
					b.Fatal(err, r.Err)
				}
			}
		})
	}
}

func BenchmarkStat(b *testing.B) {
	m := newModel(b)
	id := create(b, m, private(ops.Msg))
	for b.Loop() {
		m.Apply(stat(ops.Msg, id))
	}
}

// BenchmarkGetAsUser is a key lookup run as uid 1000: credential switch,
// msgget, switch back and the check that everything is restored.
func BenchmarkGetAsUser(b *testing.B) {
	m := newModel(b)
	create(b, m, get(ops.Msg, 42, true, false, 0o666))
	op := get(ops.Msg, 42, false, false, 0o666)
	op.As = 1000
	for b.Loop() {
		if r, err := m.Apply(op); err != nil || r.Err != ops.OK {
			b.Fatal(err, r.Err)
		}
	}
}

func BenchmarkNextID(b *testing.B) {
	m := newModel(b)
	op := ops.Op{Kind: ops.KindNextID, Type: ops.Msg, Value: 100}
	for b.Loop() {
		m.Apply(op)
	}
}

func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{0, 100} {
		b.Run(map[int]string{0: "empty", 100: "100-each"}[n], func(b *testing.B) {
			m := newModel(b)
			for _, typ := range ops.IPCTypes {
				for range n {
					create(b, m, private(typ))
				}
			}
			for b.Loop() {
				if _, err := m.Snapshot(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunScript is a 20-op script (10 get+rmid pairs) with its reset and
// final snapshot, in one hand-over (Run) and op by op (ops.Run over Apply).
func BenchmarkRunScript(b *testing.B) {
	var script []ops.Op
	for i := range 10 {
		script = append(script,
			ops.Op{Kind: ops.KindGet, Type: ops.Msg, Bind: i + 1, Creat: true, Mode: 0o600},
			ops.Op{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: i + 1}})
	}
	b.Run("Run", func(b *testing.B) {
		m := newModel(b)
		for b.Loop() {
			if _, err := m.Run(ops.Config{}, script); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Apply", func(b *testing.B) {
		m := newModel(b)
		for b.Loop() {
			if _, err := ops.Run(m, ops.Config{}, script); err != nil {
				b.Fatal(err)
			}
		}
	})
}
