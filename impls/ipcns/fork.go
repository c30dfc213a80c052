package ipcns

import (
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The fork of a task (kernel/fork.c copy_process): the child is a new
// process in the namespace. dup_mmap copies every shm VMA of the parent,
// and each copy is opened (shm_open): nattch one more, atime now, lprid the
// parent (the fork runs in the parent). copy_semundo shares the undo list
// only with CLONE_SYSVSEM, which fork does not pass: the child has none.
// Message queues hold no per-process state.

// forkTask forks op.Task into the slot op.ForkChild(): EBUSY if the script
// has used that slot since its start or its last exit. The child's
// attachments are at the parent's addresses: where the kernel chose, and in
// its window (see ops.ShmWindowPages), the same pages as the parent's.
func (ns *Namespace) forkTask(op ops.Op) ops.Errno {
	child := op.ForkChild()
	if ns.used[child] {
		return ops.EBUSY
	}
	ns.used[child] = true
	ns.in[child] = ns.in[op.Task] // copy_namespaces: the parent's IPC namespace
	parent, pid := ns.taskPID(op.Task), ns.taskPID(child)
	for _, a := range slices.Clone(ns.shm.attached) {
		if a.task != parent {
			continue
		}
		o := a.obj
		o.Nattch++
		o.Atime = true
		o.Lpid = parent
		ns.shm.attached = append(ns.shm.attached, &attachment{att: a.att, task: pid, obj: o, write: a.write, origin: a.origin})
	}
	// The window is the parent's, VMA for VMA at the same pages (its
	// guard pages too): each piece is a VMA dup_mmap copies and opens.
	copies := map[*attachment]*attachment{}
	win := make([]*shmVMA, 0, len(ns.shm.win[op.Task]))
	for _, v := range ns.shm.win[op.Task] {
		c := copies[v.a]
		if c == nil {
			c = &attachment{att: v.a.att, task: pid, obj: v.a.obj, write: v.a.write, win: true, page: v.a.page, origin: v.a.origin}
			copies[v.a] = c
		}
		ns.shmOpen(c.obj, parent)
		win = append(win, &shmVMA{start: v.start, end: v.end, pgoff: v.pgoff, a: c})
	}
	ns.shm.win[child] = win
	if ns.undoOnFork {
		for _, o := range ns.cur.types[ops.Sem].table.Listing() {
			o.Sem.CopyUndo(parent, pid)
		}
	}
	return ops.OK
}

func init() {
	handlers.Add(errno((*Namespace).forkTask), ops.KindForkTask)
	handlers.Add(result((*Namespace).switchSpace), ops.KindUnshare, ops.KindSetns)
	handlers.Add(result((*Namespace).exitTask), ops.KindExit)
	handlers.Add(result(func(ns *Namespace, op ops.Op) ops.Result { return ns.interrupt(op.Task) }), ops.KindInterrupt)
}

// exitTask ends a task the way its process exits: its attachments, its
// semaphore undo list, its place in a namespace.
func (ns *Namespace) exitTask(op ops.Op) ops.Result {
	ns.exit(op.Task)
	done := ns.semExit(op.Task)
	ns.shm.gen[op.Task]++
	ns.used[op.Task] = false
	ns.in[op.Task] = nil
	return ops.Result{Done: done}
}

// markUsed records that task t ran an operation of its present
// incarnation (the slot is not free for a fork's child any more).
func (ns *Namespace) markUsed(op ops.Op) {
	if op.Task > 0 && int(op.Task) < len(ns.used) && op.Kind != ops.KindInterrupt && op.Kind != ops.KindExit {
		ns.used[op.Task] = true
	}
}

// SetUndoOnFork makes a forked child inherit its parent's semaphore undo
// lists, as if fork passed CLONE_SYSVSEM (and as no kernel does): the
// deliberate bug of a test mutant.
func (ns *Namespace) SetUndoOnFork(on bool) { ns.undoOnFork = on }

// SetKeepUndoOnSwitch makes unshare and setns keep the task's semaphore
// undo lists instead of running exit_sem (as no kernel does): the
// deliberate bug of a test mutant.
func (ns *Namespace) SetKeepUndoOnSwitch(on bool) { ns.keepUndoOnSwitch = on }

// SetExitShmOnSetns makes setns run exit_shm as unshare does (the
// segments the task created are orphaned when it joins another namespace),
// which kernel/nsproxy.c commit_nsset does not: the deliberate bug of a
// test mutant.
func (ns *Namespace) SetExitShmOnSetns(on bool) { ns.exitShmOnSetns = on }
