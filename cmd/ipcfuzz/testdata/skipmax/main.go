// Command skipmax is a test-only implementation plugin with a wrong
// /proc/sysvipc walk: it loses the object at max_idx, the classic
// off-by-one of a bailout check. compare must catch it.
package main

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// skipMax is the optimized table with a listing that stops before max_idx.
type skipMax struct{ *optimized.IDR }

func (t skipMax) Listing() []*ipcns.Obj {
	all := t.IDR.Listing()
	if len(all) > 0 && all[len(all)-1].Idx == t.MaxIdx() {
		all = all[:len(all)-1]
	}
	return all
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return skipMax{optimized.NewIDR()} }, ipcns.Cyclic)
	plugins.Serve(ops.NewLocal(ops.Info{Name: "skipmax", Version: "test", Subsystems: []string{"ids"}}, ns))
}
