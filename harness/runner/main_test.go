package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/plugins"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// The test binary is also a plugin: with pluginEnv set, TestMain serves the
// built-in implementation it names, as `ipcfuzz plugin serve NAME` does.
const pluginEnv = "IPCFUZZ_RUNNER_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if name := os.Getenv(pluginEnv); name != "" {
		b, err := impls.Lookup(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		model, info, err := b.Start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(2)
		}
		plugins.Serve(ops.NewLocal(info, model))
		os.Exit(0)
	}
	code := m.Run()
	plugin.CleanupClients()
	os.Exit(code)
}

// opened is a side and what it says of itself.
type opened struct {
	side runner.Side
	info ops.Info
}

// open starts the built-in implementation spec names ("naive:alloc=legacy"),
// in this process or as a plugin process (this test binary), or skips the
// test when it cannot run here (the kernel without the privileges).
func open(t testing.TB, spec string, asPlugin bool) opened {
	t.Helper()
	name, cfg, err := ops.ParseImplName(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := runner.Side{Name: spec, Config: cfg}
	if asPlugin {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		p, err := host.Open(context.Background(), host.Launch{Name: spec, Path: self, Env: []string{pluginEnv + "=" + name}, CallTimeout: 2 * time.Minute})
		switch {
		case err != nil && name == "kernel":
			t.Skipf("%s (the kernel needs a private IPC namespace): %v", spec, err)
		case err != nil:
			t.Fatalf("%s: %v", spec, err)
		}
		t.Cleanup(func() { p.Close() })
		s.Impl = p
	} else {
		b, err := impls.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		m, info, err := b.Start()
		switch {
		case err != nil && name == "kernel":
			t.Skipf("%s (the kernel needs a private IPC namespace): %v", spec, err)
		case err != nil:
			t.Fatalf("%s: %v", spec, err)
		}
		l := ops.NewLocal(info, m)
		t.Cleanup(func() { l.Close() })
		s.Impl = l
	}
	info, err := s.Impl.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Info = info
	return opened{s, info}
}

// pairOf is the pair of a and b for a script of sub compared under rel, as
// the CLI builds it (runner.NewPair): each side takes the other's machine
// facts, and follows when it can and the subsystem races. ok is false when
// a side does not run sub.
func pairOf(t testing.TB, a, b opened, sub string, rel equiv.Relation) (*runner.Pair, bool) {
	t.Helper()
	p, err := runner.NewPair(context.Background(), a.side, b.side, sub, rel)
	var nr *runner.NotRunError
	if errors.As(err, &nr) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, true
}
