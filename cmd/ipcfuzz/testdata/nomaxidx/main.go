// Command nomaxidx is a test-only implementation plugin: the optimized
// model whose /proc/sysvipc listing lost its max_idx bailout. The bailout
// (Linux 5.15, "ipc: replace costly bailout check in sysvipc_find_ipc()")
// replaced a check that counts, for every record, the live ids below its
// position from slot 0; without it that count comes back, and the walk of
// n objects costs n^2 tree lookups. Every result is the optimized model's;
// only the cost differs, so compare cannot see it and worst must.
package main

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// noMaxIdx is the optimized table with the listing of Linux <= 5.14 on it.
type noMaxIdx struct{ *optimized.IDR }

// Listing implements ipcns.Table: sysvipc_find_ipc() before 5.15, each
// lookup a walk of the radix tree.
func (t noMaxIdx) Listing() []*ipcns.Obj {
	var out []*ipcns.Obj
	for pos := 0; pos < ops.IPCMNI; pos++ {
		total := 0
		for id := 0; id < pos && total < t.Len(); id++ {
			if t.Get(id) != nil {
				total++
			}
		}
		if total >= t.Len() {
			break
		}
		for ; pos < ops.IPCMNI; pos++ {
			if o := t.Get(pos); o != nil {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return noMaxIdx{optimized.NewIDR()} }, ipcns.Cyclic)
	info := ops.Info{Name: "nomaxidx", Version: "test", Subsystems: []string{"ids", "shm"}, ExactIDs: true, Counters: true}
	plugins.Serve(ops.NewLocal(info, ns))
}
