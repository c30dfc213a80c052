// Command killedonce is a test-only implementation plugin that is killed
// from outside: the optimized model, except that an operation it applies
// while one of the files IPCFUZZ_KILLEDONCE names (paths joined by ':')
// exists removes the first of them, says so on stderr and SIGKILLs its
// own process, as the OOM killer or kill -9 would: one kill per file.
// Once they are gone no script fails on a fresh plugin: compare must call
// it an infrastructure event, not a finding, and keep its last words.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

type killedOnce struct {
	*ipcns.Namespace
	markers string
}

func (m killedOnce) Apply(op ops.Op) (ops.Result, error) {
	for _, marker := range strings.Split(m.markers, ":") {
		if marker != "" && os.Remove(marker) == nil {
			// Its last words, for the event's stderr; then the kill,
			// once go-plugin's stdio stream carried them.
			fmt.Fprintf(os.Stderr, "killedonce: killed for %s\n", filepath.Base(marker))
			time.Sleep(100 * time.Millisecond)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return m.Namespace.Apply(op)
}

func main() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	info := ops.Info{Name: "killedonce", Version: "test", Subsystems: []string{"ids"}, ExactIDs: true}
	plugins.Serve(ops.NewLocal(info, killedOnce{ns, os.Getenv("IPCFUZZ_KILLEDONCE")}))
}
