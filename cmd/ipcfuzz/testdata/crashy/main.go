// Command crashy is a test-only plugin: the optimized model that dies in
// the middle of an Exec, the way the build chose (-ldflags "-X
// main.how=panic|segv"): a Go panic deep in a call stack, or a SIGSEGV that
// the runtime reports with a register dump.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// how is set with -ldflags "-X main.how=..."; $IPCFUZZ_CRASH, when set,
// overrides it (the tests build crashy once).
var how = "panic"

type crashy struct{ *ops.Local }

// Exec dies on a script that lists sem after creating one.
func (c *crashy) Exec(ctx context.Context, cfg ops.Config, scripts [][]ops.Op, follow []ops.Outcome) ([]ops.Outcome, error) {
	for _, s := range scripts {
		for i, op := range s {
			if op.Kind == ops.KindList && op.Type == ops.Sem && i > 0 {
				die(40)
			}
		}
	}
	return c.Local.Exec(ctx, cfg, scripts, follow)
}

func die(depth int) {
	if depth > 0 {
		die(depth - 1)
		return
	}
	if how == "segv" {
		syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		select {}
	}
	panic(fmt.Sprintf("crashy: the listing of sem is broken (%s)", how))
}

func main() {
	if h := os.Getenv("IPCFUZZ_CRASH"); h != "" {
		how = h
	}
	m, err := optimized.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	info := ops.Info{Name: "crashy", Version: how, Subsystems: []string{"ids"}}
	plugins.Serve(&crashy{Local: ops.NewLocal(info, m)})
}
