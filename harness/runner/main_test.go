package runner_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

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
		model, err := b.New()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(2)
		}
		plugins.Serve(ops.NewLocal(impls.InfoOf(b, model), model))
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
		if err != nil {
			t.Skipf("%s: %v", spec, err)
		}
		t.Cleanup(func() { p.Close() })
		s.Impl = p
	} else {
		b, err := impls.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := b.New()
		if err != nil {
			t.Skipf("%s: %v", spec, err)
		}
		l := ops.NewLocal(impls.InfoOf(b, m), m)
		t.Cleanup(func() { l.Close() })
		s.Impl = l
	}
	info, err := s.Impl.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return opened{s, info}
}

// pair gives each side the machine facts the other reports (as the CLI
// does) and returns the sides for a script of sub: each follows when it can
// and the subsystem races. ok is false when a side does not run sub.
func pair(a, b opened, sub string, races bool) (runner.Side, runner.Side, bool) {
	sa, sb := a.side, b.side
	sa.Config, sb.Config = runner.WithLimits(sa.Config, b.info), runner.WithLimits(sb.Config, a.info)
	sa.Follows, sb.Follows = a.info.Follows && races, b.info.Follows && races
	return sa, sb, slices.Contains(a.info.Subsystems, sub) && slices.Contains(b.info.Subsystems, sub)
}
