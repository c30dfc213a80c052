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

// release leaves task n idle and holding nothing of the current
// namespace: the call it sleeps in is interrupted (and its answer read and
// dropped), and the segments it attached at addrs are detached.
func (ts *tasks) release(n int, addrs []uintptr) error {
	p := ts.pool.Current(n)
	if call := ts.pending[n]; call != nil {
		ts.pending[n] = nil
		if err := p.Interrupt(); err != nil {
			return err
		}
		ok, err := p.ReadyWithin(releaseWait)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("task t%d (pid %d): no answer to an interrupt within %v", n, p.Pid(), releaseWait)
		}
		if _, err := p.Collect(call.buf); err != nil {
			return err
		}
	}
	for _, addr := range addrs {
		resp, err := p.Call(&task.Req{Kind: task.KindCall, Nr: unix.SYS_SHMDT, Args: [6]uint64{uint64(addr)}}, nil)
		if err != nil {
			return err
		}
		if resp.Errno != 0 {
			return fmt.Errorf("task t%d (pid %d): detaching %#x: %w", n, p.Pid(), addr, unix.Errno(resp.Errno))
		}
	}
	return nil
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
