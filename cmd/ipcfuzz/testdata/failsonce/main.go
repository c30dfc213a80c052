// Command failsonce is a test-only implementation plugin whose one bug
// does not reproduce: the optimized model, except that the first get it
// answers while the file named by IPCFUZZ_FAILSONCE exists removes that
// file and reports a wrong errno. A fuzz run against it fails once; the
// replay of that input on a fresh plugin agrees. The nightly must not call
// that a finding.
package main

import (
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

type failsOnce struct {
	*ipcns.Namespace
	marker string
}

func (m failsOnce) Apply(op ops.Op) (ops.Result, error) {
	r, err := m.Namespace.Apply(op)
	if err == nil && op.Kind == ops.KindGet && m.marker != "" && os.Remove(m.marker) == nil {
		r.Err = ops.ENOSPC
	}
	return r, err
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	info := ops.Info{Name: "failsonce", Version: "test", Subsystems: []string{"ids"}, ExactIDs: true}
	plugins.Serve(ops.NewLocal(info, failsOnce{ns, os.Getenv("IPCFUZZ_FAILSONCE")}))
}
