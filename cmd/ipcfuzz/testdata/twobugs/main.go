// Command twobugs is a test-only implementation plugin with two planted
// bugs that show as two different divergence signatures, each always at
// the same operation with the same pair of result classes:
//
//   - an IPC_RMID that fails with EINVAL is reported as EIDRM
//     (signature ids/rmid/EIDRM-EINVAL against a correct B side);
//   - a get that fails with EEXIST is reported as ENOENT
//     (signature ids/get/ENOENT-EEXIST).
//
// Neither bug changes the state, so what follows the first diverging step
// never moves the signature. compare --keep-going must report both, once
// each, with their hit counts; corpus merge must keep one script each.
package main

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// twoBugs is the optimized model with two wrong errnos.
type twoBugs struct{ *ipcns.Namespace }

func (m twoBugs) Apply(op ops.Op) (ops.Result, error) {
	r, err := m.Namespace.Apply(op)
	switch {
	case err != nil:
	case op.Kind == ops.KindRmid && r.Err == ops.EINVAL:
		r.Err = ops.EIDRM
	case op.Kind == ops.KindGet && r.Err == ops.EEXIST:
		r.Err = ops.ENOENT
	}
	return r, err
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	info := ops.Info{Name: "twobugs", Version: "test", Subsystems: []string{"ids"}, ExactIDs: true}
	plugins.Serve(ops.NewLocal(info, twoBugs{ns}))
}
