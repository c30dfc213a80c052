//go:build linux && amd64

package task

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// A timed call answers as an untimed one does, with the CPU time of its
// syscall and the clock reads that took: the first timed call of a task
// also measures the clock's cost (costPairs pairs), later ones read it
// twice. The pool's timing adds both up while it is on, and its flag goes
// out only then.
func TestTimedCall(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for name, bin := range servers(t) {
		t.Run(name, func(t *testing.T) {
			p := startServer(t, bin)
			defer p.Kill()
			tm := &Timing{}
			p.timing = tm

			req, payload := coverCall()
			plain, err := p.Call(req, payload)
			if err != nil {
				t.Fatal(err)
			}
			if req.Flags&FlagTime != 0 || plain.Nanos != 0 || plain.Clocks != 0 {
				t.Fatalf("timing off: flags %#x, %d ns, %d clock reads", req.Flags, plain.Nanos, plain.Clocks)
			}

			tm.On = true
			var nanos, reads int64
			for i := range 2 {
				req, payload := coverCall()
				resp, err := p.Call(req, payload)
				if err != nil {
					t.Fatal(err)
				}
				if req.Flags&FlagTime == 0 {
					t.Fatal("timing on: the call went without FlagTime")
				}
				if unix.Errno(resp.Errno) != unix.EINVAL {
					t.Fatalf("msgrcv on a bad id: %v, want EINVAL", unix.Errno(resp.Errno))
				}
				if resp.Nanos == 0 {
					t.Errorf("timed call %d: no CPU time", i)
				}
				want := uint64(2)
				if i == 0 {
					want += 2 * costPairs
				}
				if resp.Clocks != want {
					t.Errorf("timed call %d: %d clock reads, want %d", i, resp.Clocks, want)
				}
				nanos, reads = nanos+int64(resp.Nanos), reads+int64(resp.Clocks)
				resp.Nanos, resp.Clocks = 0, 0
				if resp != plain {
					t.Fatalf("timed call %d: %+v, untimed: %+v", i, resp, plain)
				}
			}
			if tm.Nanos != nanos || tm.Reads != reads {
				t.Errorf("the pool's timing has %d ns and %d reads, the calls brought %d and %d", tm.Nanos, tm.Reads, nanos, reads)
			}

			tm.On = false
			req, payload = coverCall()
			if _, err := p.Call(req, payload); err != nil {
				t.Fatal(err)
			}
			if tm.Nanos != nanos || tm.Reads != reads {
				t.Errorf("timing off again: the pool's timing moved to %d ns, %d reads", tm.Nanos, tm.Reads)
			}
		})
	}
}

// The worker's own syscalls are timed between Begin and End while the
// timing is on, and not at all while it is off.
func TestTimingOfTheWorker(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tm *Timing
	tm.End(tm.Begin()) // a nil timing times nothing
	tm = &Timing{}
	tm.End(tm.Begin())
	if tm.Nanos != 0 || tm.Reads != 0 {
		t.Fatalf("timing off: %d ns, %d reads", tm.Nanos, tm.Reads)
	}
	tm.On = true
	start := tm.Begin()
	for range 100 {
		unix.Getppid()
	}
	tm.End(start)
	if tm.Nanos <= 0 {
		t.Errorf("100 getppid: %d ns of CPU", tm.Nanos)
	}
	if want := int64(2 + 2*costPairs); tm.Reads != want {
		t.Errorf("%d clock reads, want %d", tm.Reads, want)
	}
}
