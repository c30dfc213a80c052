//go:build linux && amd64

package kernel

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

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// thread is the one OS thread every syscall of a Model runs on. Its goroutine
// locks itself to the thread and never unlocks, so the thread exits when the
// goroutine does, taking its private namespace and its credentials with it.
//
// Handing work to a locked thread through a channel costs two thread wake-ups
// (10-90 µs here), far more than the syscalls themselves, so calls are
// handed over through atomics instead: each side polls for a short while
// (spin), yielding the CPU between polls, before it parks on a channel.
// Back-to-back ops then cost about a microsecond of overhead on an idle
// machine; an idle Model parks and costs nothing.
type thread struct {
	mu      sync.Mutex    // one call at a time
	f       func(*thread) // the call; written by run before reqSeq is bumped
	reqSeq  atomic.Uint64 // number of calls handed over
	doneSeq atomic.Uint64 // number of calls finished
	wake    chan struct{} // (1) token for a parked thread: reqSeq or stopReq changed
	done    chan struct{} // (1) token for a parked caller: doneSeq changed
	stopReq atomic.Bool   // Close asked the thread to end
	exited  chan struct{} // closed when the goroutine ends
	spin    time.Duration // how long each side busy-waits before parking

	// Only the thread's own goroutine touches these, except discarded and
	// tid, which callers read after doneSeq (or exited) says so.
	tid   int    // the thread's id
	self  creds  // credentials and capabilities at start
	buf   []byte // reused buffer for /proc reads
	dirty bool   // an op ran since the last unshare: the namespace is no longer fresh
	// nsGen counts the namespaces the thread has been in; a task process
	// records the one it is in.
	nsGen uint64

	// nextIDWritten records, per type, a write to <type>_next_id since the
	// last unshare. Only such a write can make the value differ from the
	// -1 of a new namespace (the allocator only ever sets it back to -1,
	// and nothing else can reach this private namespace), so Snapshot
	// reads the file only then: the first open of a sysctl file in a new
	// namespace costs about 100 µs.
	nextIDWritten [len(ops.IPCTypes)]bool

	// shmState holds the task processes and attachments of the shm
	// subsystem; only the thread's goroutine touches it.
	shmState
	// spawner keeps spare task processes; nil until a task is first needed.
	spawner *spawner
	// taskBinPath is the C task server ("" for the Go task), known once
	// taskBinKnown is set.
	taskBinPath  string
	taskBinKnown bool

	// discarded is set when the thread could not restore its credentials
	// after an op run as another user; the goroutine then ends and the
	// thread exits. The Model must not send it more work.
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

// startThread starts a locked worker thread in a fresh private IPC namespace.
// It fails, having issued no IPC syscall, when the namespace cannot be had.
func startThread() (*thread, error) {
	t := &thread{
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}, 1),
		exited: make(chan struct{}),
		spin:   spinFor(),
	}
	ready := make(chan error, 1)
	goLocked(func() { t.loop(ready) })
	if err := <-ready; err != nil {
		<-t.exited
		return nil, err
	}
	return t, nil
}

// goLocked runs f on a new goroutine locked to an OS thread that is not the
// process's main thread. f must not unlock it: when f returns, the runtime
// terminates the thread instead of reusing it, so neither a namespace nor a
// credential change made there can leak to other goroutines. The main
// thread is avoided because it is never terminated: a locked goroutine that
// ends there wedges it for good instead, namespace and all.
func goLocked(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		// While this goroutine holds the main thread, the new one
		// cannot be scheduled on it.
		started := make(chan struct{})
		goLocked(func() {
			close(started)
			f()
		})
		<-started
		runtime.UnlockOSThread()
	}()
}

// loop serves calls; it runs under goLocked.
func (t *thread) loop(ready chan<- error) {
	defer close(t.exited)
	t.tid = unix.Gettid()
	t.shmState.init()
	defer t.closeTasks()

	self, err := currentCreds()
	if err != nil {
		ready <- fmt.Errorf("kernel: reading the worker thread's credentials: %w", err)
		return
	}
	t.self = self
	if err := enterNewNamespace(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	var served uint64
	for {
		if s := t.reqSeq.Load(); s != served {
			served = s
			t.f(t)
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

// run executes f on the thread and waits for it.
func (t *thread) run(f func(*thread)) {
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

// stop ends the goroutine and waits, for a second at most, until the
// kernel has let its thread go: the thread exits just after the goroutine.
func (t *thread) stop() {
	t.stopReq.Store(true)
	signal(t.wake)
	t.waitExit()
}

func (t *thread) waitExit() {
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

// enterNewNamespace moves the calling thread into a new, empty IPC namespace.
// The previous one is freed by the kernel once no task refers to it.
func enterNewNamespace() error {
	err := unix.Unshare(unix.CLONE_NEWIPC)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w); run as root: it needs CAP_SYS_ADMIN", err)
	case errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w); /proc/sys/user/max_ipc_namespaces is reached", err)
	}
	return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w)", err)
}
