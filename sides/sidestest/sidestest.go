// Package sidestest opens the implementations a property test or a fuzz
// target compares, through package sides, for a testing.TB: built-ins
// inside the test process (naive, optimized, the live kernel where a
// private IPC namespace can be had), built-ins served as plugin processes
// ("plugin:naive", of an ipcfuzz binary built once per test process), and
// any plugin executable by path. IPCFUZZ_IMPLS chooses them for the fuzz
// targets:
//
//	IPCFUZZ_IMPLS=./bin/my-model,optimized go test ./props/ids -run '^$' -fuzz '^FuzzIDs$' -fuzztime 20000x
package sidestest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// EnvImpls names the environment variable that lists the implementations a
// fuzz target compares, comma-separated.
const EnvImpls = "IPCFUZZ_IMPLS"

// DefaultImpls is what a fuzz target compares when EnvImpls is not set.
const DefaultImpls = "naive,optimized,kernel"

// FromEnv returns the sides EnvImpls names (DefaultImpls when unset), each
// closed when the test ends. Of the defaults, the live kernel is left out,
// with a log line saying why, where it cannot run. What the variable names
// explicitly must run the subsystem: otherwise the test fails, saying why
// (a plugin that does not declare it, the kernel without a private IPC
// namespace), since a skipped fuzz target reads as "ok".
func FromEnv(t testing.TB, sub engine.Subsystem) []runner.Side {
	t.Helper()
	list, explicit := os.Getenv(EnvImpls), true
	if list == "" {
		list, explicit = DefaultImpls, false
	}
	var out []runner.Side
	for _, spec := range strings.Split(list, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		if !explicit && spec == "kernel" {
			if err := kernelUsable(sub); err != nil {
				t.Logf("comparing without the live kernel: %v", err)
				continue
			}
		}
		if !explicit {
			out = append(out, Open(t, spec, sub))
			continue
		}
		// What the user named must run: a skip would read as "ok" to go test
		// -fuzz, though nothing was fuzzed.
		side, why := Try(t, spec, sub)
		if why != "" {
			t.Fatalf("%s=%q: %s", EnvImpls, list, why)
		}
		out = append(out, side)
	}
	if len(out) < 2 {
		t.Fatalf("%s=%q: a comparison needs at least two implementations", EnvImpls, list)
	}
	return out
}

// kernelUsable reports why the kernel side cannot run sub here, or nil.
func kernelUsable(sub engine.Subsystem) error { return sides.Usable("kernel", sub.Name) }

// Model starts the built-in called name (impls.Lookup) in process and
// returns its model, closed when the test ends.
func Model(t testing.TB, name string) ops.Model {
	t.Helper()
	b, err := impls.Lookup(name)
	require.NoError(t, err)
	m, _, err := b.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// Subject opens the implementation spec names in process (as sides.Open
// does) as a subject whose cost is measured, closed when the test ends.
func Subject(t testing.TB, spec string) complexity.Subject {
	t.Helper()
	s, err := sides.Open(context.Background(), spec, sides.Options{InProcess: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Impl.Close() })
	return complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config}
}

// Open returns the implementation spec names as a side for sub, closed when
// the test ends: a built-in name with options ("naive:alloc=legacy") in
// process, "plugin:NAME" as a plugin process of the ipcfuzz binary, or the
// path of a plugin executable. The kernel skips the test, saying why, where
// it cannot run.
func Open(t testing.TB, spec string, sub engine.Subsystem) runner.Side {
	t.Helper()
	side, why := Try(t, spec, sub)
	if why != "" {
		t.Skip(why)
	}
	return side
}

// Try is Open that returns, instead of skipping, why the side cannot run
// here ("" when it can).
func Try(t testing.TB, spec string, sub engine.Subsystem) (runner.Side, string) {
	t.Helper()
	o := sides.Options{InProcess: true, CallTimeout: time.Minute}
	if strings.HasPrefix(spec, "plugin:") || strings.Contains(spec, "image=") { // a guest's /init too
		o.Self = ipcfuzzBinary(t)
	}
	side, err := sides.Open(context.Background(), spec, o)
	switch {
	case err != nil && strings.HasPrefix(spec, "kernel"):
		return side, fmt.Sprintf("the live kernel side needs a private IPC namespace: %v", err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = side.Impl.Close() })
	if !slices.Contains(side.Info.Subsystems, sub.Name) {
		return side, fmt.Sprintf("%s does not run the %s subsystem", spec, sub.Name)
	}
	return side, ""
}

// Pair opens a and b (Open: a side that cannot run here skips the test)
// and builds their pair on sub's scripts under rel, with sub's invariant.
func Pair(t testing.TB, sub engine.Subsystem, a, b string, rel equiv.Relation) *runner.Pair {
	t.Helper()
	p, err := sub.Pair(context.Background(), Open(t, a, sub), Open(t, b, sub), rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var built struct {
	mu    sync.Mutex
	users int // tests running that use it
	dir   string
	path  string
}

// ipcfuzzBinary builds cmd/ipcfuzz to serve built-ins as plugins, once for
// all the tests that use it at the same time. It lives in a temporary
// directory that is removed when the last of them ends.
func ipcfuzzBinary(t testing.TB) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.users == 0 {
		dir, path, err := buildIpcfuzz(t)
		if err != nil {
			t.Fatalf("building ipcfuzz to serve built-ins as plugins: %v", err)
		}
		built.dir, built.path = dir, path
	}
	built.users++
	t.Cleanup(func() {
		built.mu.Lock()
		defer built.mu.Unlock()
		if built.users--; built.users == 0 {
			_ = os.RemoveAll(built.dir)
			built.dir, built.path = "", ""
		}
	})
	return built.path
}

// buildIpcfuzz builds cmd/ipcfuzz into a new temporary directory.
func buildIpcfuzz(t testing.TB) (dir, path string, err error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", err
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	dir, err = os.MkdirTemp("", "ipcfuzz-sides-")
	if err != nil {
		return "", "", err
	}
	path, err = testkit.Build(dir, "ipcfuzz", filepath.Join(root, "cmd", "ipcfuzz"))
	if err != nil {
		t.Logf("%v", err)
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, path, nil
}
