// Command noseqbump is an example third-party implementation plugin, and a
// deliberately wrong one: its cyclic allocator forgets to bump seq when the
// cursor wraps, so an id comes back the moment its slot is reused. ipcfuzz
// finds that against any correct implementation:
//
//	go build -o noseqbump ./plugins/example/noseqbump
//	go run ./cmd/ipcfuzz compare ./noseqbump optimized --checks 500
//
// A real plugin looks the same: build an ops.Model (here the optimized model
// with one part replaced) and hand it to plugins.Serve.
package main

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// noSeqBump allocates like Linux >= 5.2 but never moves seq.
type noSeqBump struct{}

func (noSeqBump) Alloc(st *ipcns.AllocState, t ipcns.Table) (int, int, bool) {
	seq := st.Seq
	idx, _, ok := ipcns.Cyclic.Alloc(st, t)
	st.Seq = seq // the bug
	return idx, seq, ok
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, noSeqBump{})
	info := ops.Info{Name: "noseqbump", Version: "example", Subsystems: []string{"ids"}}
	plugins.Serve(ops.NewLocal(info, ns))
}
