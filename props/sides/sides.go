// Package sides opens the built-in implementations inside the test process,
// the way the property tests compare them: naive and optimized always, the
// live kernel where a private IPC namespace can be had (the test is skipped,
// saying why, where it cannot, or where the kernel adapter lacks the
// subsystem).
package sides

import (
	"slices"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// Open returns the built-in implementation name as an in-process side for
// subsystem, closed when the test ends.
func Open(t testing.TB, name, subsystem string) runner.Side {
	t.Helper()
	b, err := impls.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.New()
	if err != nil {
		if name == "kernel" {
			t.Skipf("the live kernel side needs a private IPC namespace: %v", err)
		}
		t.Fatalf("%s: %v", name, err)
	}
	l := ops.NewLocal(b.Info, m)
	t.Cleanup(func() { _ = l.Close() })
	if !slices.Contains(b.Info.Subsystems, subsystem) {
		t.Skipf("%s does not run the %s subsystem", name, subsystem)
	}
	return runner.Side{Name: name, Impl: l, Follows: b.Info.Follows && subsystem == "msg"}
}

// Impl is Open(...).Impl.
func Impl(t testing.TB, name, subsystem string) ops.Impl { return Open(t, name, subsystem).Impl }
