//go:build linux && amd64

package kcov

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTracer enables KCOV on this thread, issues a syscall and finds
// program counters; it skips on a kernel without KCOV (Debian's and this
// machine's: ci/kernel.sh --cover builds one, and a guest of it runs the
// kernel side's own use of a Tracer).
func TestTracer(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tr, err := Open(0)
	if errors.Is(err, ErrNoKCOV) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Reset()
	unix.Getppid()
	pcs := tr.PCs(nil)
	if len(pcs) == 0 {
		t.Fatalf("no program counters after getppid")
	}
	tr.Reset()
	if n := len(tr.PCs(nil)); n != 0 {
		t.Errorf("%d program counters right after Reset", n)
	}
}

func TestAvailableMatchesOpen(t *testing.T) {
	if Available() {
		t.Skip("this kernel has KCOV")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := Open(0); !errors.Is(err, ErrNoKCOV) {
		t.Errorf("Open on a kernel without %s: %v, want ErrNoKCOV", Path, err)
	}
}
