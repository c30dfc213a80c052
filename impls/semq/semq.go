// Package semq holds the semantics of one SysV semaphore array (ipc/sem.c)
// for the models: the sequential, cumulative evaluation of a semop with
// rollback (perform_atomic_semop), the pending queues, the wake-ups that a
// change of the values causes (do_smart_update), SETVAL and SETALL, the
// undo entries and their application at exit (exit_sem), IPC_RMID, signals,
// and GETNCNT/GETZCNT (count_semcnt).
//
// Unlike a message queue, nothing here is up to the scheduler: the task
// that changes the values completes every sleeper it can, under the lock,
// and decides the result each sleeper's semop returns (ipc-spec §3.6). So
// every operation has exactly one outcome.
//
// Two structures keep the pending operations (see Structure): PerSemaphore
// is the structure of Linux 6.x; Scan keeps one list in arrival order and
// derives the kernel's queues from it whenever it needs one. They must
// agree on everything observable; they differ in the work they do, which
// Evaluations counts.
//
// The array knows nothing of ids, permissions, namespaces or time: the
// caller does the checks of semop and semctl that come before the lock
// (E2BIG, EINVAL, EFBIG, EACCES, ...) and keeps the processes; the array
// takes over at the point where the kernel holds the semaphore lock.
// Times are observed only as set or unset.
package semq

import (
	"fmt"
	"sort"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Limits of a semaphore value and of an undo adjustment (SEMVMX, SEMAEM).
const (
	SemVMX    = 32767  // the largest semaphore value
	SemadjMax = 32767  // the largest semadj
	SemadjMin = -32768 // the smallest semadj
)

// efbig is EFBIG (x86-64 errno 27), which ops does not define: Semop returns
// it for a sem_num outside the array, a check the caller should have made.
const efbig = ops.EFBIG

// Sop is one struct sembuf.
type Sop struct {
	Num    int  // sem_num, 0..65535 (the kernel's unsigned short)
	Op     int  // sem_op, -32768..32767
	NoWait bool // IPC_NOWAIT
	Undo   bool // SEM_UNDO
}

// String writes a sop as "s<num><op>" with the flags: s0-1, s1+2/nowait/undo.
func (s Sop) String() string {
	f := ""
	if s.NoWait {
		f += "/nowait"
	}
	if s.Undo {
		f += "/undo"
	}
	return fmt.Sprintf("s%d%+d%s", s.Num, s.Op, f)
}

// Completion is a sleeper whose semop returned during an operation, with
// what it returned: OK, ERANGE or EAGAIN (decided by the waker), EIDRM
// (IPC_RMID), EINTR (a signal, see Interrupt) or EAGAIN (a timeout, see
// Timeout).
type Completion struct {
	Task int
	Err  ops.Errno
}

// Structure is how pending operations are kept.
type Structure uint8

// The structures.
const (
	// PerSemaphore is the structure of Linux 6.x (ipc-spec §3.5): per
	// semaphore, a list of simple operations that alter it and one of
	// simple wait-for-zero operations; global lists of complex operations;
	// while a complex operation is pending, every altering operation waits
	// on the global list (merge_queues on the first complex one,
	// unmerge_queues when the last one is gone).
	PerSemaphore Structure = iota
	// Scan is the naive model: one list of pending operations in arrival
	// order. Whenever the algorithm needs one of the kernel's queues, it
	// derives it by scanning the whole list, and whether the array is in
	// global mode is derived at the start of every operation (a complex
	// operation is pending). The rules are the kernel's; the structure is
	// not.
	Scan
)

// String is the structure's name.
func (s Structure) String() string {
	switch s {
	case PerSemaphore:
		return "PerSemaphore"
	case Scan:
		return "Scan"
	}
	return fmt.Sprintf("Structure(%d)", uint8(s))
}

// Options choose a structure and the counting rule.
type Options struct {
	Structure Structure
	// LegacyCount counts GETNCNT/GETZCNT as Linux 3.10 to 3.15 did
	// (count_semncnt and count_semzcnt before the change to SUS in 3.16):
	// a sleeping operation counts once for every one of its sops that
	// could make it wait, instead of once on the sop it is blocked at.
	// GETNCNT(k) sums, over the pending operations that alter the array,
	// their sops on k with sem_op < 0 and no IPC_NOWAIT; GETZCNT(k) sums,
	// over the pending wait-for-zero-only operations, their sops on k
	// without IPC_NOWAIT. A zero sop of an operation that also alters is
	// not counted anywhere. (Up to 3.9 every pending operation was on one
	// global list and its zero sops counted too; that is not modelled.)
	LegacyCount bool
	// Quirk is a deliberate bug, for mutation tests of the harness itself
	// (never set by naive or optimized).
	Quirk Quirk
}

// Quirk is a deliberate departure from the kernel's semantics.
type Quirk uint8

const (
	// QuirkAlterBeforeZero serves the alter queues before the
	// wait-for-zero queues in do_smart_update.
	QuirkAlterBeforeZero Quirk = 1 + iota
	// QuirkUndoUnclamped applies semadj at exit without clamping the
	// value to 0..SEMVMX.
	QuirkUndoUnclamped
	// QuirkUndoNoUpperClamp applies semadj at exit clamping the value at
	// 0 but not at SEMVMX.
	QuirkUndoNoUpperClamp
	// QuirkUndoNoLowerClamp applies semadj at exit clamping the value at
	// SEMVMX but not at 0.
	QuirkUndoNoLowerClamp
	// QuirkNoRestartAfterComplex goes on down the queue after a complex
	// sleeper succeeded in update_queue, instead of starting again from
	// the head (check_restart): an earlier sleeper the complex operation
	// let through stays asleep.
	QuirkNoRestartAfterComplex
)

// sem is one struct sem: its value, sempid and whether its otime is set.
type sem struct {
	val   int
	pid   ops.PID
	otime bool
}

// Array is one semaphore array with its pending operations and the undo
// entries of the processes that have one for it. Its methods are not safe
// for concurrent use.
type Array struct {
	opt     Options
	sems    []sem
	ctime   bool
	removed bool
	undo    map[ops.PID][]int // semadj per process
	byTask  map[int]*waiter   // the pending operations
	q       structure
	seq     uint64 // arrival number of the next pending operation
	evals   int64
	done    []Completion // completions of the operation in progress
}

// NewArray returns a new array of nsems semaphores (nsems >= 1), all 0,
// with ctime set and otime unset, as newary leaves it.
func NewArray(nsems int, opt Options) *Array {
	if nsems < 1 {
		panic(fmt.Sprintf("semq: NewArray(%d): an array has at least one semaphore", nsems))
	}
	a := &Array{
		opt:    opt,
		sems:   make([]sem, nsems),
		ctime:  true,
		undo:   map[ops.PID][]int{},
		byTask: map[int]*waiter{},
	}
	switch opt.Structure {
	case PerSemaphore:
		a.q = newPerSem(nsems)
	case Scan:
		a.q = &scanQueues{a: a}
	default:
		panic(fmt.Sprintf("semq: unknown structure %v", opt.Structure))
	}
	return a
}

// Nsems is the number of semaphores.
func (a *Array) Nsems() int { return len(a.sems) }

// Options returns the options the array was made with.
func (a *Array) Options() Options { return a.opt }

// Removed says whether Rmid was called.
func (a *Array) Removed() bool { return a.removed }

// Semop is perform_atomic_semop and the caller's side of semtimedop after
// the id lookup and the nsops, EFBIG and permission checks, which the caller
// makes (ipc-spec §3.3). caller is the issuing process: its pid goes to
// sempid and its undo entry takes the SEM_UNDO adjustments (Semop creates
// the entry when a sop has SEM_UNDO, like EnsureUndo). task is the issuing
// task, which must not have a pending operation on this array.
//
// The result is an error (OK, ERANGE, EAGAIN) or blocked: the operation
// was queued and the task sleeps until a Completion names it. done lists
// the sleepers that this call completed (do_smart_update after a
// successful operation that alters the array), in task order.
//
// Calls the caller should not make give: EINVAL for no sops; efbig (27)
// for a sem_num outside the array; EBUSY when task already has a pending
// operation; EIDRM after Rmid. None of them changes anything.
func (a *Array) Semop(caller ops.PID, task int, sops []Sop) (err ops.Errno, blocked bool, done []Completion) {
	if e := a.checkSemop(task, sops); e != ops.OK {
		return e, false, nil
	}
	if anyUndo(sops) {
		a.EnsureUndo(caller)
	}
	a.lock()
	defer a.unlock()
	w := &waiter{task: task, pid: caller, sops: append([]Sop(nil), sops...), alter: altersArray(sops)}
	blocked, err = a.perform(w)
	switch {
	case blocked:
		w.seq = a.seq
		a.seq++
		a.byTask[task] = w
		a.q.enqueue(w)
		return ops.OK, true, nil
	case err != ops.OK:
		return err, false, nil
	case w.alter:
		a.smartUpdate(sops, true)
	default:
		a.setOtime(sops) // only wait-for-zero sops: no queue to look at
	}
	return ops.OK, false, a.takeDone()
}

// checkSemop returns the error for a call Semop must refuse, or OK.
func (a *Array) checkSemop(task int, sops []Sop) ops.Errno {
	switch {
	case a.removed:
		return ops.EIDRM
	case len(sops) == 0:
		return ops.EINVAL
	case a.byTask[task] != nil:
		return ops.EBUSY
	}
	for _, s := range sops {
		if s.Num < 0 || s.Num >= len(a.sems) {
			return efbig
		}
		if s.Op < -32768 || s.Op > 32767 {
			panic(fmt.Sprintf("semq: sem_op %d does not fit a short", s.Op))
		}
	}
	return ops.OK
}

func anyUndo(sops []Sop) bool {
	for _, s := range sops {
		if s.Undo {
			return true
		}
	}
	return false
}

// altersArray is semtimedop's alter: some sem_op is not 0.
func altersArray(sops []Sop) bool {
	for _, s := range sops {
		if s.Op != 0 {
			return true
		}
	}
	return false
}

// EnsureUndo is find_alloc_undo: it gives process p an undo entry for this
// array (all adjustments 0) unless it has one. semtimedop does this at step
// 6 of ipc-spec §3.3, before its later checks, so the entry stays even when
// the call then fails, and Exit later sets otime. Nothing happens after
// Rmid.
func (a *Array) EnsureUndo(p ops.PID) {
	if a.removed || a.undo[p] != nil {
		return
	}
	a.undo[p] = make([]int, len(a.sems))
}

// CopyUndo gives process to a copy of from's undo entry, if from has one:
// what a fork that shared undo lists would leave (no kernel's fork does;
// for test mutants).
func (a *Array) CopyUndo(from, to ops.PID) {
	if adj := a.undo[from]; adj != nil && !a.removed {
		a.undo[to] = append([]int(nil), adj...)
	}
}

// HasUndo says whether process p has an undo entry for this array.
func (a *Array) HasUndo(p ops.PID) bool { return a.undo[p] != nil }

// Semadj returns process p's adjustment for semaphore n (0 without entry).
func (a *Array) Semadj(p ops.PID, n int) int {
	if adj := a.undo[p]; adj != nil {
		return adj[n]
	}
	return 0
}

// GetVal is semctl(GETVAL): semval of semaphore n (0 <= n < Nsems).
func (a *Array) GetVal(n int) int { return a.sems[n].val }

// GetPid is semctl(GETPID): the process that last changed semaphore n (or
// succeeded in waiting for it to be zero); 0 if none.
func (a *Array) GetPid(n int) ops.PID { return a.sems[n].pid }

// GetAll is semctl(GETALL): every value.
func (a *Array) GetAll() []int {
	vs := make([]int, len(a.sems))
	for i, s := range a.sems {
		vs[i] = s.val
	}
	return vs
}

// GetNcnt is semctl(GETNCNT), count_semcnt(n, false): the number of pending
// operations blocked at a sop on n with sem_op < 0 (see Options.LegacyCount
// for the rule before 3.16). It evaluates nothing.
func (a *Array) GetNcnt(n int) int { return a.count(n, false) }

// GetZcnt is semctl(GETZCNT), count_semcnt(n, true): the same for sops with
// sem_op == 0.
func (a *Array) GetZcnt(n int) int { return a.count(n, true) }

func (a *Array) count(n int, zero bool) int {
	if a.opt.LegacyCount {
		return a.q.legacyCount(n, zero)
	}
	return a.q.count(n, zero)
}

// SetVal is semctl(SETVAL) after its checks (the value is in 0..SemVMX and
// n is a semaphore): it clears semadj[n] in every undo entry, sets the
// value, sempid = caller and ctime, then runs do_smart_update on every
// semaphore without forcing otime. It returns the sleepers it completed,
// in task order.
func (a *Array) SetVal(caller ops.PID, n, v int) []Completion {
	checkValue(v)
	if a.removed {
		return nil
	}
	a.lock()
	defer a.unlock()
	for _, adj := range a.undo {
		adj[n] = 0
	}
	a.sems[n].val, a.sems[n].pid = v, caller
	a.ctime = true
	a.smartUpdate(nil, false)
	return a.takeDone()
}

// SetAll is semctl(SETALL) after its checks (one value per semaphore, each
// in 0..SemVMX): it sets every value and every sempid = caller, clears every
// semadj of every undo entry, sets ctime, then runs do_smart_update on every
// semaphore without forcing otime. It returns the sleepers it completed,
// in task order.
func (a *Array) SetAll(caller ops.PID, vs []int) []Completion {
	if len(vs) != len(a.sems) {
		panic(fmt.Sprintf("semq: SetAll with %d values for %d semaphores", len(vs), len(a.sems)))
	}
	for _, v := range vs {
		checkValue(v)
	}
	if a.removed {
		return nil
	}
	a.lock()
	defer a.unlock()
	for i, v := range vs {
		a.sems[i].val, a.sems[i].pid = v, caller
	}
	for _, adj := range a.undo {
		clear(adj)
	}
	a.ctime = true
	a.smartUpdate(nil, false)
	return a.takeDone()
}

func checkValue(v int) {
	if v < 0 || v > SemVMX {
		panic(fmt.Sprintf("semq: value %d outside 0..%d: the caller returns ERANGE", v, SemVMX))
	}
}

// SetCtime records a change of ctime by the caller (IPC_SET).
func (a *Array) SetCtime() { a.ctime = true }

// Rmid is freeary: every pending operation returns EIDRM and every undo
// entry for the array is dropped. The array is dead afterwards: Semop
// returns EIDRM and the other changes do nothing. It returns the
// completions in task order.
func (a *Array) Rmid() []Completion {
	if a.removed {
		return nil
	}
	a.lock()
	defer a.unlock()
	for _, w := range a.q.all() {
		a.finish(w, ops.EIDRM)
	}
	a.undo = map[ops.PID][]int{}
	a.removed = true
	return a.takeDone()
}

// Exit is exit_sem for this array: if process p has an undo entry, the
// entry is dropped and every non-zero semadj is added to its semaphore,
// clamped to 0..SemVMX, with sempid = p; then do_smart_update runs on every
// semaphore with otime forced (so otime is set even when every semadj was
// 0). It returns the sleepers it completed, in task order. Without an entry
// nothing happens (no otime change).
//
// The kernel runs exit_sem only when the last task sharing the undo list
// exits, so no operation of p can be pending (the caller guarantees it: a
// sleeping task cannot exit). Should one be pending anyway, it stays
// queued and is evaluated as if p had no entry; if it then completes with
// SEM_UNDO sops, p gets a new entry holding only that operation's
// adjustments.
func (a *Array) Exit(p ops.PID) []Completion {
	adj := a.undo[p]
	if adj == nil {
		return nil
	}
	a.lock()
	defer a.unlock()
	delete(a.undo, p)
	for k, d := range adj {
		if d == 0 {
			continue
		}
		v := a.sems[k].val + d
		if a.opt.Quirk != QuirkUndoUnclamped && a.opt.Quirk != QuirkUndoNoLowerClamp {
			v = max(v, 0)
		}
		if a.opt.Quirk != QuirkUndoUnclamped && a.opt.Quirk != QuirkUndoNoUpperClamp {
			v = min(v, SemVMX)
		}
		a.sems[k].val = v
		a.sems[k].pid = p
	}
	a.smartUpdate(nil, true)
	return a.takeDone()
}

// Interrupt is a signal to task: its pending operation leaves the queue and
// its semop returns EINTR. The other sleepers are not re-evaluated. ok is
// false (and nothing changes) when the task has no pending operation.
func (a *Array) Interrupt(task int) (c Completion, ok bool) {
	return a.leave(task, ops.EINTR)
}

// Timeout is the end of a semtimedop timeout for task: like Interrupt, but
// the semop returns EAGAIN.
func (a *Array) Timeout(task int) (c Completion, ok bool) {
	return a.leave(task, ops.EAGAIN)
}

func (a *Array) leave(task int, err ops.Errno) (Completion, bool) {
	w := a.byTask[task]
	if w == nil {
		return Completion{}, false
	}
	a.lock()
	defer a.unlock()
	a.finish(w, err)
	a.done = nil
	return Completion{Task: task, Err: err}, true
}

// Pending says whether task has a pending operation (sleeps in semop).
func (a *Array) Pending(task int) bool { return a.byTask[task] != nil }

// PendingTasks lists the tasks with a pending operation, in task order.
func (a *Array) PendingTasks() []int {
	ts := make([]int, 0, len(a.byTask))
	for t := range a.byTask {
		ts = append(ts, t)
	}
	sort.Ints(ts)
	return ts
}

// Otime says whether sem_otime is set (IPC_STAT reports the largest of the
// per-semaphore otimes, so: whether any is).
func (a *Array) Otime() bool {
	for _, s := range a.sems {
		if s.otime {
			return true
		}
	}
	return false
}

// Ctime says whether sem_ctime is set: at creation, SETVAL, SETALL and
// SetCtime (IPC_SET).
func (a *Array) Ctime() bool { return a.ctime }

// Evaluations counts the work done so far, for comparing structures. Both
// count every perform_atomic_semop evaluation (the caller's own, and every
// re-evaluation of a sleeper). Scan also counts every element of its list
// that it visits to derive one of the kernel's queues: the whole list at
// the start of each call that takes the lock (Semop, SetVal, SetAll, Exit
// with an entry, Interrupt or Timeout of a sleeper, Rmid), to know whether
// a complex operation is pending, which decides global mode; and again for
// each queue that a
// wake-up walks or tests for emptiness (check_restart, the choice of global
// or per-semaphore alter pass), except the queues that the mode alone
// empties. Reads (Get*, Pending, Otime) count nothing in either structure.
func (a *Array) Evaluations() int64 { return a.evals }

// Clone returns a deep copy: the copy and the original change independently.
func (a *Array) Clone() *Array {
	c := *a
	c.sems = append([]sem(nil), a.sems...)
	c.undo = make(map[ops.PID][]int, len(a.undo))
	for p, adj := range a.undo {
		c.undo[p] = append([]int(nil), adj...)
	}
	c.byTask = make(map[int]*waiter, len(a.byTask))
	for t, w := range a.byTask {
		c.byTask[t] = w.clone()
	}
	c.q = a.q.clone(&c, c.byTask)
	c.done = nil
	return &c
}

// lock starts an operation that may change the queues (sem_lock).
func (a *Array) lock() { a.q.lock() }

// unlock ends it (sem_unlock, which calls unmerge_queues).
func (a *Array) unlock() { a.q.unlock() }

// finish removes a pending operation that returns err and records it.
func (a *Array) finish(w *waiter, err ops.Errno) {
	a.q.unlink(w)
	delete(a.byTask, w.task)
	a.done = append(a.done, Completion{Task: w.task, Err: err})
}

// takeDone returns the completions of the operation, in task order.
func (a *Array) takeDone() []Completion {
	d := a.done
	a.done = nil
	sort.Slice(d, func(i, j int) bool { return d[i].Task < d[j].Task })
	return d
}
