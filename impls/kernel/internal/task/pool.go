//go:build linux && amd64

package task

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Task processes are costly to start (a fork and exec, and for the Go task
// the start of a Go runtime: milliseconds) and cheap to reuse, so they
// outlive a Reset. A task carries nothing from one script to the next:
//
//   - at Reset, a task the finished script used is released by its owner
//     (its sleeping call interrupted and its answer read and dropped, every
//     segment it attached detached);
//   - its first call in the next script first joins the new namespace
//     (setns; the call carries the join), which also drops its semaphore
//     undo list (exit_sem runs in setns, kernel/nsproxy.c commit_nsset),
//     so no adjustment made in one script is ever applied in another;
//   - its credentials are restored after every call, and its signal mask
//     is the runtime's between calls;
//   - the identity a script sees is the task number and incarnation, never
//     the pid (the owner's business).
//
// A task the owner is unsure of (a failed release or join, an adapter
// error in the middle of a script) is killed instead, and a new process
// takes its place at its next use. Only the tasks a script uses are woken:
// joining is lazy, and a Reset touches only the tasks the script used.

// Pool holds the task processes of one worker thread by task number. Only
// that thread may use it: a process is born in the namespace of the thread
// that starts it.
type Pool struct {
	procs []*Proc
	// gen counts the namespaces the worker has been in; a process records
	// the one it is in.
	gen uint64
	// path is the worker's namespace as a task opens it to join.
	path string
	// spawner keeps spare processes; nil until a task is first needed.
	spawner *spawner
	// bin is the C task server ("" for the Go task), known once binKnown
	// is set.
	bin      string
	binKnown bool
	// cover is the coverage of the pool's task calls; every process of
	// the pool points at it.
	cover Coverage
	// timing is the CPU time of the pool's task calls; every process of
	// the pool points at it.
	timing Timing
	// dying counts the processes killed by retire and not reaped yet.
	dying sync.WaitGroup
}

// Coverage is the kernel coverage (KCOV) of a pool's task calls. While On
// is set, every call a task of the pool is asked to run carries FlagCover,
// and the program counters that come back with a response are appended
// to PCs as the response is collected: those of a call that slept come
// with whichever Collect reads its answer. Its owner (the worker thread)
// empties PCs when it likes.
type Coverage struct {
	On  bool
	PCs []uint64
}

// Cover returns the coverage of the pool's task calls, for its owner to
// turn on and read.
func (p *Pool) Cover() *Coverage { return &p.cover }

// Time returns the timing of the pool's task calls, for its owner to turn
// on and read.
func (p *Pool) Time() *Timing { return &p.timing }

// NewPool makes the pool of tasks 1..size-1 of the worker thread tid of
// this process (task 0 is the worker itself).
func NewPool(size, tid int) *Pool {
	return &Pool{
		procs: make([]*Proc, size),
		path:  "/proc/" + strconv.Itoa(os.Getpid()) + "/task/" + strconv.Itoa(tid) + "/ns/ipc",
	}
}

// NewNamespace records that the worker moved into a new namespace: each
// task joins it at its next call.
func (p *Pool) NewNamespace() { p.gen++ }

// Get returns the process of task n in the current namespace: the one it
// had, after it joined this namespace if it was in an earlier one, or a new
// one.
func (p *Pool) Get(n int) (*Proc, error) {
	t := p.procs[n]
	if t != nil && t.ns != p.gen {
		p.owesJoin(t)
	}
	if t == nil {
		var err error
		if t, err = p.start(n); err != nil {
			return nil, err
		}
		p.procs[n] = t
	}
	return t, nil
}

// Current returns the process of task n if it has run in the current
// namespace, else nil.
func (p *Pool) Current(n int) *Proc {
	if t := p.procs[n]; t != nil && t.ns == p.gen {
		return t
	}
	return nil
}

// start returns a new process for task n: a spare if one is ready (it
// joins this namespace), else one started here. The first new task starts
// the spawner.
func (p *Pool) start(n int) (*Proc, error) {
	if p.spawner == nil {
		if s, err := startSpawner(p.Bin(), len(p.procs)-1); err == nil {
			p.spawner = s
		}
	} else if t := p.spawner.take(); t != nil {
		t.n = n
		t.cover, t.timing = &p.cover, &p.timing
		p.owesJoin(t)
		return t, nil
	}
	t, err := StartProcess(n, p.Bin())
	if err != nil {
		return nil, err
	}
	t.ns = p.gen
	t.cover, t.timing = &p.cover, &p.timing
	return t, nil
}

// owesJoin has task t join the worker's current namespace before its next
// call: the call carries the join (Req.JoinLen), and a task that cannot
// join answers it as fatal, an error that its owner answers by killing it.
func (p *Pool) owesJoin(t *Proc) {
	t.joinPath = p.path
	t.ns = p.gen
}

// Proc returns the process of task n, whatever namespace it is in, or nil.
func (p *Pool) Proc(n int) *Proc { return p.procs[n] }

// Bin returns the C task server to run as task processes, or "" for the Go
// task; it looks for (or builds) the server once.
func (p *Pool) Bin() string {
	if !p.binKnown {
		p.binKnown = true
		p.bin, _ = Server()
	}
	return p.bin
}

// Exit ends task n's process the way a process exits, if it has run in
// this namespace (its attachments go, exit_shm and exit_sem run); a task
// that has not has nothing here to end, and its process stays for the
// next incarnation.
func (p *Pool) Exit(n int) error {
	if n <= 0 || n >= len(p.procs) {
		return fmt.Errorf("task t%d cannot exit", n)
	}
	if t := p.Current(n); t != nil {
		p.procs[n] = nil
		return t.Exit()
	}
	return nil
}

// Kill kills and reaps task n's process, if it has one.
func (p *Pool) Kill(n int) {
	if t := p.procs[n]; t != nil {
		t.Kill()
		p.procs[n] = nil
	}
}

// KillAll kills and reaps every task process.
func (p *Pool) KillAll() {
	for n := range p.procs {
		p.Kill(n)
	}
}

// Close kills and reaps every task process and every spare, and waits
// for the processes retired before.
func (p *Pool) Close() {
	p.KillAll()
	if p.spawner != nil {
		p.spawner.close()
		p.spawner = nil
	}
	p.dying.Wait()
}

// retire kills task n's process, if it has one, without waiting for its
// end: it is reaped in the background (Close waits for it). Only for a
// process that holds nothing of the current namespace, whose end nothing
// the script sees can depend on: the one a fork replaces, which has made
// no call since the worker entered this namespace.
func (p *Pool) retire(n int) {
	t := p.procs[n]
	if t == nil {
		return
	}
	p.procs[n] = nil
	t.signalKill()
	p.dying.Add(1)
	go func() {
		defer p.dying.Done()
		t.reap()
	}()
}

// Fork forks task parent's process (which has run in this namespace) into
// task child's: the process child had, if any, is killed first, and reaped
// in the background (retire): the caller (package kernel) forks only into
// a slot that has run nothing in this namespace, and reaping a process
// costs about as much as the fork.
func (p *Pool) Fork(parent, child int) (*Proc, error) {
	t := p.Current(parent)
	if t == nil || child <= 0 || child >= len(p.procs) || child == parent {
		return nil, fmt.Errorf("task t%d cannot fork into t%d", parent, child)
	}
	if c := p.procs[child]; c != nil && c.ns == p.gen && !c.OwesJoin() {
		p.Kill(child) // it may hold something of this namespace: wait for its end
	} else {
		p.retire(child)
	}
	c, err := t.Fork(child)
	if err != nil {
		return nil, err
	}
	p.procs[child] = c
	return c, nil
}
