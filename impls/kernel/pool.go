//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Task processes are costly to start (a fork and exec of this binary and
// the start of a Go runtime: milliseconds) and cheap to reuse, so they
// outlive a Reset. A task carries nothing from one script to the next:
//
//   - at Reset, a task the finished script used is released: a call it
//     sleeps in is interrupted (and its answer read and dropped), and every
//     segment it attached is detached;
//   - its first call in the next script first joins the new namespace
//     (setns; the call carries the join), which also drops its semaphore
//     undo list (exit_sem runs in
//     setns, kernel/nsproxy.c commit_nsset), so no adjustment made in one
//     script is ever applied in another;
//   - its credentials are restored after every call, and its signal mask
//     is the runtime's between calls;
//   - the identity a script sees is the task number and incarnation, never
//     the pid, and the table from pids to identities is rebuilt at Reset.
//
// A task the adapter is unsure of (a failed release or join, an adapter
// error in the middle of a script) is killed instead, and a new process
// takes its place at its next use. Only the tasks a script uses are woken:
// joining is lazy, and a Reset touches only the tasks the script used.

// releaseWait bounds how long an interrupted task may take to answer at a
// Reset before it is killed instead.
const releaseWait = time.Second

// task returns the process of task n in the current namespace: the one it
// had, after it joined this namespace if it was in an earlier one, or a new
// one.
func (t *thread) task(n int) (*taskProc, error) {
	p := t.tasks[n]
	if p != nil && p.ns != t.nsGen {
		t.owesJoin(p)
	}
	if p == nil {
		var err error
		if p, err = t.newTask(n); err != nil {
			return nil, err
		}
		t.tasks[n] = p
	}
	t.pids[p.pid] = ops.TaskPID(n, t.gen[n])
	return p, nil
}

// newTask returns a new process for task n: a spare if one is ready (it
// joins this namespace), else one started here. The first new task starts
// the spawner.
func (t *thread) newTask(n int) (*taskProc, error) {
	if t.spawner == nil {
		if s, err := startSpawner(t.taskBin()); err == nil {
			t.spawner = s
		}
	} else if p := t.spawner.take(); p != nil {
		p.n = n
		t.owesJoin(p)
		return p, nil
	}
	return t.startTask(n)
}

// owesJoin has task p join the worker's current namespace before its next
// call: the call carries the join (taskReq.JoinLen), and a task that cannot
// join answers it as fatal, an adapter error that kills it.
func (t *thread) owesJoin(p *taskProc) {
	p.joinPath = "/proc/" + strconv.Itoa(os.Getpid()) + "/task/" + strconv.Itoa(t.tid) + "/ns/ipc"
	p.ns = t.nsGen
}

// releaseTasks leaves every task the script used idle and holding nothing
// of the current namespace; a task that cannot be released is killed.
func (t *thread) releaseTasks() {
	for n, p := range t.tasks {
		if p == nil || p.ns != t.nsGen {
			continue
		}
		if err := t.release(p); err != nil {
			p.kill()
			t.tasks[n] = nil
		}
	}
}

// release interrupts the call p sleeps in, if any, and detaches every
// segment p attached.
func (t *thread) release(p *taskProc) error {
	if call := p.pending; call != nil {
		p.pending = nil
		if err := unix.Tgkill(p.pid, p.pid, interruptSignal); err != nil {
			return fmt.Errorf("task t%d (pid %d): interrupting: %w", p.n, p.pid, err)
		}
		ok, err := p.readyWithin(releaseWait)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("task t%d (pid %d): no answer to an interrupt within %v", p.n, p.pid, releaseWait)
		}
		if _, err := p.collect(call.buf); err != nil {
			return err
		}
	}
	for _, a := range t.attached {
		if a.task != p.n {
			continue
		}
		resp, err := p.call(&taskReq{Kind: taskCall, Nr: unix.SYS_SHMDT, Args: [6]uint64{uint64(a.addr)}}, nil)
		if err != nil {
			return err
		}
		if resp.Errno != 0 {
			return fmt.Errorf("task t%d (pid %d): detaching %#x: %w", p.n, p.pid, a.addr, unix.Errno(resp.Errno))
		}
	}
	return nil
}

// closeTasks ends what a thread leaves behind when it ends: the worker's
// own attachments (they are the host process's, and outlive the thread)
// and every task process.
func (t *thread) closeTasks() {
	t.detachWorker()
	t.killTasks()
	if t.spawner != nil {
		t.spawner.close()
		t.spawner = nil
	}
}

// killTasks kills and reaps every task process.
func (t *thread) killTasks() {
	for n, p := range t.tasks {
		if p != nil {
			p.kill()
			t.tasks[n] = nil
		}
	}
}

// exitTask ends task n's process the way a process exits (its attachments
// go, exit_shm and exit_sem run) and makes its next operation start a new
// incarnation. A task that has not run in this namespace has nothing here
// to end: its process stays for the next incarnation.
func (t *thread) exitTask(n int) error {
	if n <= 0 || n > ops.MaxTask {
		return fmt.Errorf("task t%d cannot exit", n)
	}
	var err error
	if p := t.tasks[n]; p != nil && p.ns == t.nsGen {
		t.tasks[n] = nil
		err = p.exit()
	}
	for _, a := range slices.Clone(t.attached) {
		if a.task == n {
			t.forget(a)
		}
	}
	t.gen[n]++
	return err
}

// interrupt sends task n the interrupt signal if it sleeps in a call,
// which then returns EINTR (a completion that settling collects); a task
// that does not sleep is not disturbed.
func (t *thread) interrupt(n int) error {
	p := t.tasks[n]
	if p == nil || p.pending == nil {
		return nil
	}
	if err := unix.Tgkill(p.pid, p.pid, interruptSignal); err != nil {
		return fmt.Errorf("task t%d (pid %d): interrupting: %w", n, p.pid, err)
	}
	return nil
}
