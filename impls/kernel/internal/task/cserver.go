//go:build linux && amd64

package task

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/cbuild"
)

// A task process is, where a C compiler is found, a small freestanding
// server (csrc/taskserver.c: no libc, one thread, a megabyte of bss) that
// speaks the same protocol as the Go task of server.go: it starts and
// exits in a fraction of the time a Go runtime takes, and a script's exit
// needs a new process. It is built at first use by package cbuild. Without
// a compiler the adapter re-executes its own binary as the task (the Go
// task), which behaves the same; IPCFUZZ_KERNEL_TASKS=go asks for it.

//go:generate go test -run TestProtoHeader -update

//go:embed csrc
var serverSource embed.FS

// EnvTasks names the environment variable that chooses the task
// processes: "go" for the Go task, anything else for the C server where it
// can be built.
const EnvTasks = "IPCFUZZ_KERNEL_TASKS"

// buildTimeout bounds the build of the C server.
const buildTimeout = time.Minute

// Server returns the path of the C task server, building it if needed, or
// "" (and why) when the Go task is to be used.
func Server() (string, error) {
	if os.Getenv(EnvTasks) == "go" {
		return "", fmt.Errorf("%s=go", EnvTasks)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	src, err := fs.Sub(serverSource, "csrc")
	if err != nil {
		return "", fmt.Errorf("the task server: %w", err)
	}
	path, err := cbuild.Build(ctx, src, "taskserver", cbuild.Options{})
	if err != nil {
		return "", fmt.Errorf("the task server: %w", err)
	}
	return path, nil
}
