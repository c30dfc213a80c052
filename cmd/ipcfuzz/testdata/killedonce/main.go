// Command killedonce is a test-only implementation plugin that is killed
// from outside once: the optimized model, except that the first operation
// it applies while the file named by IPCFUZZ_KILLEDONCE exists removes that
// file and SIGKILLs its own process, as the OOM killer or kill -9 would.
// No script fails on a fresh plugin: compare must call it an
// infrastructure event, not a finding.
package main

import (
	"os"
	"syscall"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

type killedOnce struct {
	*ipcns.Namespace
	marker string
}

func (m killedOnce) Apply(op ops.Op) (ops.Result, error) {
	if m.marker != "" && os.Remove(m.marker) == nil {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return m.Namespace.Apply(op)
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	info := ops.Info{Name: "killedonce", Version: "test", Subsystems: []string{"ids"}, ExactIDs: true}
	plugins.Serve(ops.NewLocal(info, killedOnce{ns, os.Getenv("IPCFUZZ_KILLEDONCE")}))
}
