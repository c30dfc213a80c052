//go:build linux && amd64

package task

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// A task may leave the worker's namespace within a script: Unshare gives
// it a new IPC namespace of its own, Join moves it into the namespace at a
// path (another task's /proc/PID/ns/ipc, or the worker's, Pool.Path). The
// pool's bookkeeping is untouched by either: the task stays the current
// one of its task number (it has run in this script), so its next call
// owes no join and it stays where it went until the next script, whose
// first call of it joins the worker's namespace again (owesJoin).

// ErrGoTaskNamespaces is the refusal of an unshare or a setns by the Go
// task. Its process has the threads of a Go runtime, which the runtime
// clones with CLONE_SYSVSEM: they share one semaphore undo list, and the
// exit_sem of an unshare or setns by the serving thread only drops that
// thread's reference, leaving the adjustments unapplied.
var ErrGoTaskNamespaces = errors.New("the Go task cannot unshare or setns as a process does (its threads share one semaphore undo list, so exit_sem applies nothing): unshare and setns need the C task server (a C compiler)")

// isGo reports whether the task is the Go task (this binary re-executed).
func (p *Proc) isGo() bool { return p.cmd != nil && p.cmd.Path == "/proc/self/exe" }

// OwesJoin reports whether the task is to join the worker's namespace
// before its next call: it is still where an earlier script left it, and
// counts as in the worker's namespace.
func (p *Proc) OwesJoin() bool { return p.joinPath != "" }

// Path is the worker's IPC namespace as a task opens it to join.
func (p *Pool) Path() string { return p.path }

// Unshare moves task n (started or joined first, as for any call) into a
// new IPC namespace: unshare(CLONE_NEWIPC), which runs exit_sem and
// exit_shm in the namespace it leaves.
func (p *Pool) Unshare(n int) (*Proc, error) {
	t, err := p.goTaskRefused(n)
	if err != nil {
		return nil, err
	}
	resp, err := t.Call(&Req{Kind: KindCall, Nr: unix.SYS_UNSHARE, Args: [6]uint64{unix.CLONE_NEWIPC}}, nil)
	if err != nil {
		return nil, err
	}
	switch e := unix.Errno(resp.Errno); e {
	case 0:
	case unix.ENOSPC:
		return nil, fmt.Errorf("task t%d (pid %d): unshare(CLONE_NEWIPC): %w (/proc/sys/user/max_ipc_namespaces is reached: a namespace lives while a task is in it or an attachment maps one of its segments)", n, t.pid, e)
	default:
		return nil, fmt.Errorf("task t%d (pid %d): unshare(CLONE_NEWIPC): %w", n, t.pid, e)
	}
	return t, nil
}

// Join moves task n (started first if need be) into the IPC namespace at
// path: setns, which runs exit_sem in the namespace it leaves. A join the
// task owed is dropped: this one takes its place.
func (p *Pool) Join(n int, path string) (*Proc, error) {
	t, err := p.goTaskRefused(n)
	if err != nil {
		return nil, err
	}
	t.joinPath = ""
	resp, err := t.Call(&Req{Kind: KindJoin}, []byte(path))
	if err != nil {
		return nil, err
	}
	if resp.Errno != 0 {
		return nil, fmt.Errorf("task t%d (pid %d): setns %s: %w", n, t.pid, path, unix.Errno(resp.Errno))
	}
	return t, nil
}

// goTaskRefused returns task n's process (Get), or ErrGoTaskNamespaces
// for the Go task, before it is started.
func (p *Pool) goTaskRefused(n int) (*Proc, error) {
	if p.Bin() == "" {
		return nil, ErrGoTaskNamespaces
	}
	t, err := p.Get(n)
	if err != nil {
		return nil, err
	}
	if t.isGo() {
		return nil, ErrGoTaskNamespaces
	}
	return t, nil
}
