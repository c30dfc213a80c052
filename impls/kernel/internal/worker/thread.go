//go:build linux && amd64

package worker

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/creds"
)

// Thread is one OS thread, in a private IPC namespace of its own, that runs
// the calls handed to it one at a time. Its goroutine locks itself to the
// thread and never unlocks, so the thread exits when the goroutine does,
// taking its namespace and its credentials with it.
//
// Handing work to a locked thread through a channel costs two thread
// wake-ups (10-90 µs here), far more than the syscalls themselves, so calls
// are handed over through atomics instead: each side polls for a short
// while (spin), yielding the CPU between polls, before it parks on a
// channel. Back-to-back calls then cost about a microsecond of overhead on
// an idle machine; an idle Thread parks and costs nothing.
type Thread struct {
	mu      sync.Mutex    // one call at a time
	f       func()        // the call; written by Run before reqSeq is bumped
	reqSeq  atomic.Uint64 // number of calls handed over
	doneSeq atomic.Uint64 // number of calls finished
	wake    chan struct{} // (1) token for a parked thread: reqSeq or stopReq changed
	done    chan struct{} // (1) token for a parked caller: doneSeq changed
	stopReq atomic.Bool   // Stop asked the thread to end
	exited  chan struct{} // closed when the goroutine ends
	spin    time.Duration // how long each side busy-waits before parking

	// Only the thread's own goroutine touches these, except discarded and
	// tid, which callers read after doneSeq (or exited) says so.
	tid  int         // the thread's id
	self creds.Creds // credentials and capabilities at start
	// discarded is set when the thread could not restore its credentials
	// after a call run as another user; the goroutine then ends and the
	// thread exits. Nobody may send it more work.
	discarded error
}

// spinFor is how long the thread waits for the next call, and a caller for
// its result, before parking. With one P, a spinning caller would only delay
// the thread, so there is no spinning then.
func spinFor() time.Duration {
	if runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	return 100 * time.Microsecond
}

// Start starts a locked thread in a fresh private IPC namespace. It fails,
// having issued no IPC syscall, when the namespace cannot be had. atExit,
// if not nil, runs on the thread when it ends (Stop, or a discard), also
// when Start fails.
func Start(atExit func()) (*Thread, error) {
	t := &Thread{
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}, 1),
		exited: make(chan struct{}),
		spin:   spinFor(),
	}
	ready := make(chan error, 1)
	GoLocked(func() { t.loop(ready, atExit) })
	if err := <-ready; err != nil {
		<-t.exited
		return nil, err
	}
	return t, nil
}

// loop serves calls; it runs under GoLocked.
func (t *Thread) loop(ready chan<- error, atExit func()) {
	defer close(t.exited)
	t.tid = unix.Gettid()
	if atExit != nil {
		defer atExit()
	}
	self, err := creds.Current()
	if err != nil {
		ready <- fmt.Errorf("kernel: reading the worker thread's credentials: %w", err)
		return
	}
	t.self = self
	if err := EnterNewNamespace(); err != nil {
		ready <- err
		return
	}
	// Scripts run operations as another user (as=): a process that
	// cannot (a user namespace denies setgroups and maps one uid)
	// refuses now, in one line, rather than fail every such operation.
	if err := creds.CanSwitch(self, creds.ProbeUID); err != nil {
		ready <- fmt.Errorf("kernel: cannot run operations as another user (as=): %w", err)
		return
	}
	ready <- nil
	t.serve()
}

// serve runs the calls handed over until Stop, or a discard.
func (t *Thread) serve() {
	var served uint64
	for {
		if s := t.reqSeq.Load(); s != served {
			served = s
			t.f()
			t.doneSeq.Store(s)
			signal(t.done)
			if t.discarded != nil {
				return
			}
			continue
		}
		if t.stopReq.Load() {
			return
		}
		if !spinUntil(t.spin, func() bool { return t.reqSeq.Load() != served || t.stopReq.Load() }) {
			<-t.wake
		}
	}
}

// Run executes f on the thread and waits for it. After a call that
// discarded the thread (Discarded), Run must not be called again.
func (t *Thread) Run(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.f = f
	s := t.reqSeq.Add(1)
	signal(t.wake)
	finished := func() bool { return t.doneSeq.Load() == s }
	if spinUntil(t.spin, finished) {
		return
	}
	for !finished() {
		<-t.done
	}
}

// Tid is the thread's id.
func (t *Thread) Tid() int { return t.tid }

// Discarded is the reason the thread ended itself, or nil: read it after
// Run returns.
func (t *Thread) Discarded() error { return t.discarded }

// Stop ends the goroutine and waits, for a second at most, until the
// kernel has let its thread go: the thread exits just after the goroutine.
func (t *Thread) Stop() {
	t.stopReq.Store(true)
	signal(t.wake)
	t.WaitExit()
}

// WaitExit waits until the goroutine has ended (Stop, or a discard) and,
// for a second at most, until the thread is gone.
func (t *Thread) WaitExit() {
	<-t.exited
	task := "/proc/self/task/" + strconv.Itoa(t.tid)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
}

// signal leaves a token in c (capacity 1) unless one is already there. The
// receiver re-checks its condition after every token, so a stale token costs
// one extra check and a dropped one is never needed.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// spinUntil waits up to d for cond, yielding the CPU between checks, and
// reports whether cond became true. Yielding matters when the machine is
// busy: the other side may be waiting for this very CPU, and a pure busy
// loop would hold it off for the whole of d (on 2 loaded CPUs it made the
// mean op 5-15 times slower than parking; with yields it is 2-4 times
// faster than parking).
func spinUntil(d time.Duration, cond func() bool) bool {
	if d <= 0 {
		return cond()
	}
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}
