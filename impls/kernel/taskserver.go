//go:build linux && amd64

package kernel

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A task process is, where a C compiler is found, a small freestanding
// server (csrc/taskserver.c: no libc, one thread, a megabyte of bss) that
// speaks the same protocol as the Go task of task.go: it starts and exits
// in a fraction of the time a Go runtime takes, and a script's exit needs a
// new process. It is compiled at first use into the user's cache directory
// (named after a hash of its source and flags, written under a temporary
// name and renamed, so concurrent builders agree). Without a compiler the
// adapter re-executes its own binary as the task (the Go task), which
// behaves the same; IPCFUZZ_KERNEL_TASKS=go asks for it.

//go:embed csrc/taskserver.c
var taskServerSource []byte

// EnvTasks names the environment variable that chooses the task
// processes: "go" for the Go task, anything else for the C server where it
// can be built.
const EnvTasks = "IPCFUZZ_KERNEL_TASKS"

// taskServerFlags build a static executable with no libc, no builtins that
// would call memset or memcpy behind the code's back, no stack protector.
func taskServerFlags() []string {
	return []string{
		"-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
		"-fno-tree-loop-distribute-patterns", "-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie",
		"-Wall", "-Werror", "-Wl,--build-id=none",
	}
}

// taskServer returns the path of the C task server, building it if needed,
// or "" (and why) when the Go task is to be used.
func taskServer() (string, error) {
	if os.Getenv(EnvTasks) == "go" {
		return "", fmt.Errorf("%s=go", EnvTasks)
	}
	sum := sha256.Sum256(append(append([]byte(nil), taskServerSource...), strings.Join(taskServerFlags(), " ")...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "ipcfuzz")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("task server cache directory: %w", err)
	}
	path := filepath.Join(dir, "taskserver-"+hex.EncodeToString(sum[:8]))
	if fi, err := os.Stat(path); err == nil && fi.Mode()&0o100 != 0 {
		return path, nil
	}
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		return "", errors.New("no C compiler (CC, cc, gcc)")
	}
	src := filepath.Join(dir, fmt.Sprintf("taskserver-%d.c", os.Getpid()))
	tmp := filepath.Join(dir, fmt.Sprintf("taskserver-%d.tmp", os.Getpid()))
	if err := os.WriteFile(src, taskServerSource, 0o644); err != nil {
		return "", fmt.Errorf("writing the task server source: %w", err)
	}
	defer os.Remove(src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cc, append(taskServerFlags(), "-o", tmp, src)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		msg, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		return "", fmt.Errorf("compiling the task server with %s: %v: %.200s", cc, err, msg)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("installing the task server: %w", err)
	}
	return path, nil
}
