//go:build linux && amd64

package task

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
)

// coverCall is a call a task can run anywhere without changing anything:
// a msgrcv on an id that cannot exist (EINVAL), with a buffer.
func coverCall() (*Req, []byte) {
	req := &Req{Kind: KindCall, Nr: unix.SYS_MSGRCV, PtrArgs: 1 << 1,
		Args: [6]uint64{1<<31 - 1, 0, 8, 0, unix.IPC_NOWAIT}}
	payload := []byte("01234567abcdefgh")
	return req, payload
}

// servers returns the task servers to test: the Go task ("") and the C
// server where it can be built.
func servers(t *testing.T) map[string]string {
	out := map[string]string{"go": ""}
	if bin, err := Server(); err == nil {
		out["c"] = bin
	} else {
		t.Logf("no C task server: %v", err)
	}
	return out
}

// startServer starts task server bin (servers) as task 1 from the calling
// thread, which must be locked; the caller kills it.
func startServer(t *testing.T, bin string) *Proc {
	t.Helper()
	p, err := StartProcess(1, bin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A covered call answers as an uncovered one does; its program counters
// come after the payload, none where the kernel has no KCOV (this
// machine's), some where it has (a guest of ci/kernel.sh --cover). The
// pool's coverage collects them while it is on, and its flag goes out
// only then.
func TestCoveredCall(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for name, bin := range servers(t) {
		t.Run(name, func(t *testing.T) {
			p := startServer(t, bin)
			exited := false
			defer func() {
				if !exited {
					p.Kill()
				}
			}()
			cov := &Coverage{}
			p.cover = cov

			req, plainPayload := coverCall()
			plain, err := p.Call(req, plainPayload)
			if err != nil {
				t.Fatal(err)
			}
			if req.Flags&FlagCover != 0 || len(p.PCs()) != 0 {
				t.Fatalf("coverage off: flags %#x, %d PCs", req.Flags, len(p.PCs()))
			}

			cov.On = true
			for i := range 2 { // the first covered call enables KCOV, the second finds it
				req, payload := coverCall()
				if i == 0 && os.Geteuid() == 0 {
					req.As = 65534 // KCOV is enabled as the task's own user, not the call's
				}
				resp, err := p.Call(req, payload)
				if err != nil {
					t.Fatal(err)
				}
				if req.Flags&FlagCover == 0 {
					t.Fatalf("coverage on: the call went without FlagCover")
				}
				pcs := resp.PCs
				resp.PCs = 0
				if resp != plain || string(payload) != string(plainPayload) {
					t.Fatalf("covered call %d: %+v %q, uncovered: %+v %q", i, resp, payload, plain, plainPayload)
				}
				if unix.Errno(resp.Errno) != unix.EINVAL {
					t.Fatalf("msgrcv on a bad id: %v, want EINVAL", unix.Errno(resp.Errno))
				}
				if int(pcs) != len(p.PCs()) {
					t.Fatalf("the response says %d PCs, %d were read", pcs, len(p.PCs()))
				}
				if !kcov.Available() && pcs != 0 {
					t.Fatalf("%d PCs on a kernel without KCOV", pcs)
				}
				if kcov.Available() && pcs == 0 {
					t.Fatalf("no PCs of a msgrcv on a kernel with KCOV")
				}
			}
			if len(cov.PCs) != 2*len(p.PCs()) && kcov.Available() {
				t.Errorf("the pool's coverage has %d PCs, the calls brought %d", len(cov.PCs), 2*len(p.PCs()))
			}

			cov.On = false
			req, payload := coverCall()
			if _, err := p.Call(req, payload); err != nil {
				t.Fatal(err)
			}
			if len(p.PCs()) != 0 {
				t.Errorf("%d PCs once coverage is off again", len(p.PCs()))
			}
			exited = true
			if err := p.Exit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A join (a script's setns, the C server only) is traced as a call is:
// its flag goes out while the pool's coverage is on, and the program
// counters of its setns follow, none where the kernel has no KCOV.
func TestCoveredJoin(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if os.Geteuid() != 0 {
		t.Skip("setns needs CAP_SYS_ADMIN: run as root (.ci/run's first pass is)")
	}
	bin, err := Server()
	if err != nil {
		t.Skipf("no C task server, which alone joins a namespace: %v", err)
	}
	p := startServer(t, bin)
	defer p.Kill()
	cov := &Coverage{On: true}
	p.cover = cov
	req := &Req{Kind: KindJoin}
	resp, err := p.Call(req, []byte("/proc/self/ns/ipc")) // its own: the worker's
	if err != nil {
		t.Fatal(err)
	}
	if resp.Errno != 0 {
		t.Fatalf("setns into its own namespace: %v", unix.Errno(resp.Errno))
	}
	if req.Flags&FlagCover == 0 {
		t.Fatalf("coverage on: the join went without FlagCover")
	}
	if int(resp.PCs) != len(p.PCs()) || len(cov.PCs) != len(p.PCs()) {
		t.Fatalf("the response says %d PCs, %d were read, the pool has %d", resp.PCs, len(p.PCs()), len(cov.PCs))
	}
	if kcov.Available() != (resp.PCs > 0) {
		t.Fatalf("%d PCs of a setns, KCOV here: %v", resp.PCs, kcov.Available())
	}
}

// A forked task (the C server only) traces its own calls: it drops the
// buffer it inherits and enables its own, or answers 0 PCs where the
// kernel has no KCOV.
func TestCoveredCallOfForkedTask(t *testing.T) {
	bin, err := Server()
	if err != nil {
		t.Skipf("no C task server (a fork needs it): %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := startServer(t, bin)
	defer p.Kill()
	p.cover = &Coverage{On: true}
	req, payload := coverCall()
	parent, err := p.Call(req, payload)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Fork(2)
	if err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			c.Kill()
		}
	}()
	req, payload = coverCall()
	child, err := c.Call(req, payload)
	if err != nil {
		t.Fatal(err)
	}
	if req.Flags&FlagCover == 0 {
		t.Fatalf("the child's call went without FlagCover")
	}
	if child.Errno != parent.Errno || child.R != parent.R {
		t.Errorf("the child's call: %+v, the parent's: %+v", child, parent)
	}
	if kcov.Available() != (child.PCs > 0) {
		t.Errorf("the child's call brought %d PCs; the kernel has KCOV: %v", child.PCs, kcov.Available())
	}
	exited = true
	if err := c.Exit(); err != nil {
		t.Fatal(err)
	}
}
