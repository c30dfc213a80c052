//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// EnvTasks names the environment variable that chooses the task
// processes: "go" for the Go task, anything else for the C server where it
// can be built (package task).
const EnvTasks = task.EnvTasks

// tasks are the tasks t1..t15 of the script, seen from the worker thread:
// their processes (package task), the call each sleeps in, and the
// identities the script knows them by. t0 is the worker thread itself.
type tasks struct {
	pool *task.Pool
	// pending is the call each task sleeps in (or returned from since it
	// was last settled); nil when the task is idle.
	pending [ops.NumTasks]*pendingCall
	// gen is each task's incarnation in this script; pids translates the
	// pids the kernel reports into task identities.
	gen  [ops.NumTasks]int
	pids map[int]ops.PID
	// used: the task ran an operation of its present incarnation (its
	// slot is not free for a fork's child).
	used [ops.NumTasks]bool
}

// pendingCall is a task's call that has not returned (msgsnd, msgrcv or
// semop): the task sleeps in it, or was woken and has not been settled
// since.
type pendingCall struct {
	kind ops.Kind
	id   int64  // the object id as the kernel read it (an int)
	buf  []byte // the payload the call was started with; its answer comes back into it
}

// releaseWait bounds how long an interrupted task may take to answer at a
// Reset before it is killed instead.
const releaseWait = time.Second

// newTasks makes the tasks of the worker thread tid.
func newTasks(tid int) *tasks {
	ts := &tasks{pool: task.NewPool(ops.NumTasks, tid)}
	ts.beginScript()
	return ts
}

// beginScript starts the identities of a script; the processes stay.
func (ts *tasks) beginScript() {
	ts.gen = [ops.NumTasks]int{}
	ts.used = [ops.NumTasks]bool{}
	ts.pids = map[int]ops.PID{os.Getpid(): ops.TaskPID(0, 0)}
}

// get returns the process of task n in the current namespace (pool.go of
// package task), and records its pid as the task's present incarnation.
func (ts *tasks) get(n int) (*task.Proc, error) {
	p, err := ts.pool.Get(n)
	if err != nil {
		return nil, err
	}
	ts.pids[p.Pid()] = ops.TaskPID(n, ts.gen[n])
	return p, nil
}

// pid translates a pid the kernel reports into a task identity.
func (ts *tasks) pid(p int64) ops.PID {
	if p == 0 {
		return 0
	}
	if id, ok := ts.pids[int(p)]; ok {
		return id
	}
	return ops.PIDUnknown
}

// busy reports whether task n sleeps in an earlier call.
func (ts *tasks) busy(n uint8) bool {
	return n != 0 && int(n) < len(ts.pending) && ts.pending[n] != nil
}

// exit ends task n's process the way a process exits (its attachments go,
// exit_shm and exit_sem run) and makes its next operation start a new
// incarnation. A task that has not run in this namespace has nothing here
// to end: its process stays for the next incarnation.
func (ts *tasks) exit(n int) error {
	if n <= 0 || n >= len(ts.pending) {
		return fmt.Errorf("task t%d cannot exit", n)
	}
	err := ts.pool.Exit(n)
	ts.pending[n] = nil
	ts.gen[n]++
	ts.used[n] = false
	return err
}

// interrupt sends task n the interrupt signal if it sleeps in a call,
// which then returns EINTR (a completion that settling collects); a task
// that does not sleep is not disturbed.
func (ts *tasks) interrupt(n int) error {
	if ts.pending[n] == nil {
		return nil
	}
	return ts.pool.Current(n).Interrupt()
}

// releaseAll leaves every task of the current namespace idle and holding
// nothing of it: the call a task sleeps in is interrupted (its answer read
// and dropped), its window emptied and the segments it attached at
// addrsOf(t) detached; a task that cannot be released is killed. The
// tasks are released side by side: each task's requests are written at
// once (the task answers them in order), so that a reset waits about as
// long as its slowest task takes, not for one round trip after the other.
func (ts *tasks) releaseAll(addrsOf func(t int) []uintptr) {
	var started [ops.NumTasks][]releaseReq
	for t := 1; t < ops.NumTasks; t++ {
		if ts.pool.Current(t) == nil {
			continue
		}
		reqs, err := ts.interruptPending(t, addrsOf(t))
		if err == nil {
			started[t], err = ts.startRelease(t, reqs)
		}
		if err != nil {
			ts.kill(t)
		}
	}
	for t, reqs := range started {
		if len(reqs) == 0 {
			continue
		}
		if err := ts.collectRelease(t, reqs); err != nil {
			ts.kill(t)
		}
	}
}

// releaseReq is one request of a release: an munmap of the task's window
// (addr 0) or the shmdt of an attachment at addr.
type releaseReq struct{ addr uintptr }

// maxPipelined bounds the requests written to one task before their
// answers are read: far below what its pipes hold.
const maxPipelined = 64

// interruptPending interrupts the call task t sleeps in, if any, and reads
// and drops its answer; it returns the requests that release what the task
// holds (its window, then the segments it attached at addrs).
func (ts *tasks) interruptPending(t int, addrs []uintptr) ([]releaseReq, error) {
	p := ts.pool.Current(t)
	if call := ts.pending[t]; call != nil {
		ts.pending[t] = nil
		if err := p.Interrupt(); err != nil {
			return nil, err
		}
		ok, err := p.ReadyWithin(releaseWait)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("task t%d (pid %d): no answer to an interrupt within %v", t, p.Pid(), releaseWait)
		}
		if _, err := p.Collect(call.buf); err != nil {
			return nil, err
		}
	}
	var reqs []releaseReq
	if p.Window {
		reqs = append(reqs, releaseReq{})
	}
	for _, a := range addrs {
		reqs = append(reqs, releaseReq{addr: a})
	}
	return reqs, nil
}

// startRelease writes task t's release requests and returns those whose
// answers are still to be read (collectRelease). A task that owes a join,
// or has more than maxPipelined requests, is released one call after the
// other here instead, and nothing is left to read.
func (ts *tasks) startRelease(t int, reqs []releaseReq) ([]releaseReq, error) {
	p := ts.pool.Current(t)
	if p.OwesJoin() || len(reqs) > maxPipelined {
		for _, r := range reqs {
			resp, err := p.Call(r.req(), nil)
			if err != nil {
				return nil, err
			}
			if err := r.check(p, resp); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	for i, r := range reqs {
		if err := p.Start(r.req(), nil); err != nil {
			// The answers of those written are never read: the task is
			// killed.
			return nil, fmt.Errorf("release request %d of %d: %w", i+1, len(reqs), err)
		}
	}
	return reqs, nil
}

// collectRelease reads the answers to the requests startRelease wrote to
// task t, in order.
func (ts *tasks) collectRelease(t int, reqs []releaseReq) error {
	p := ts.pool.Current(t)
	for _, r := range reqs {
		resp, err := p.Collect(nil)
		if err != nil {
			return err
		}
		if err := r.check(p, resp); err != nil {
			return err
		}
	}
	return nil
}

func (r releaseReq) req() *task.Req {
	if r.addr == 0 {
		return windowClearReq()
	}
	return &task.Req{Kind: task.KindCall, Nr: unix.SYS_SHMDT, Args: [6]uint64{uint64(r.addr)}}
}

func (r releaseReq) check(p *task.Proc, resp task.Resp) error {
	if resp.Errno == 0 {
		return nil
	}
	if r.addr == 0 {
		return fmt.Errorf("task pid %d: clearing its shm window: %w", p.Pid(), unix.Errno(resp.Errno))
	}
	return fmt.Errorf("task pid %d: detaching %#x: %w", p.Pid(), r.addr, unix.Errno(resp.Errno))
}

// kill kills and reaps task n's process; a new one takes its place at its
// next use.
func (ts *tasks) kill(n int) {
	ts.pool.Kill(n)
	ts.pending[n] = nil
}

// killAll kills and reaps every task process.
func (ts *tasks) killAll() {
	for n := range ts.pending {
		ts.kill(n)
	}
}

// close kills and reaps every task process and every spare.
func (ts *tasks) close() {
	ts.pool.Close()
	ts.pending = [ops.NumTasks]*pendingCall{}
}
