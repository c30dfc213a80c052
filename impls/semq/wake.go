package semq

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// waiter is one pending operation (struct sem_queue).
type waiter struct {
	task     int
	pid      ops.PID // the issuing process (q->pid)
	sops     []Sop
	alter    bool   // some sem_op != 0
	blocking int    // index of the sop it blocked at in its last evaluation
	seq      uint64 // arrival number

	// links of PerSemaphore's lists
	prev, next *waiter
	on         *wlist
}

func (w *waiter) complex() bool { return len(w.sops) > 1 }

func (w *waiter) clone() *waiter {
	c := *w
	c.prev, c.next, c.on = nil, nil, nil
	return &c
}

// listKind names the kernel's pending queues (ipc-spec §3.5).
type listKind uint8

const (
	alterQueue  listKind = iota // sems[k].pending_alter
	constQueue                  // sems[k].pending_const
	globalAlter                 // sma->pending_alter
	globalConst                 // sma->pending_const
)

// queueID is one queue: a kind, and the semaphore for per-semaphore kinds.
type queueID struct {
	kind listKind
	sem  int
}

func (l queueID) perSem() bool { return l.kind == alterQueue || l.kind == constQueue }

func gAlter() queueID       { return queueID{kind: globalAlter} }
func gConst() queueID       { return queueID{kind: globalConst} }
func alterOf(k int) queueID { return queueID{kind: alterQueue, sem: k} }
func constOf(k int) queueID { return queueID{kind: constQueue, sem: k} }

// structure keeps the pending operations and answers for the kernel's
// queues. The wake-up algorithm (this file) is the same for every
// structure.
type structure interface {
	// lock and unlock bracket every operation that may change the
	// queues (sem_lock, and sem_unlock with its unmerge_queues).
	lock()
	unlock()
	// enqueue adds a blocked operation where semtimedop puts it.
	enqueue(w *waiter)
	// unlink removes a pending operation (unlink_queue).
	unlink(w *waiter)
	// each calls fn on the operations of queue l in order until fn
	// returns false. fn may unlink the operation it is given, and only
	// that one, from l (list_for_each_entry_safe).
	each(l queueID, fn func(*waiter) bool)
	// empty says whether queue l holds no operation.
	empty(l queueID) bool
	// all returns every pending operation, in no particular order.
	all() []*waiter
	// count and legacyCount are GETNCNT (zero false) and GETZCNT.
	count(n int, zero bool) int
	legacyCount(n int, zero bool) int
	// clone copies the structure for the copy a of its array, whose
	// pending operations (copies of the originals) are byTask.
	clone(a *Array, byTask map[int]*waiter) structure
}

// perform is perform_atomic_semop: w's sops are applied in order to the
// values (and, with SEM_UNDO, to the caller's semadj), each seeing the
// effect of the ones before it. The first sop that cannot proceed decides:
// a wait-for-zero on a non-zero value or a decrement below 0 blocks there
// (w.blocking records it), which is EAGAIN if that sop has IPC_NOWAIT; a
// value above SemVMX or a semadj outside [SemadjMin, SemadjMax] is ERANGE.
// Either way every change is rolled back. On success every sop's semaphore
// gets sempid = w.pid.
//
// The kernel takes a faster path when no semaphore is altered twice (it
// checks every sop against the old values first); its results are the same
// as the sequential ones, so only the sequential path is modelled.
func (a *Array) perform(w *waiter) (blocked bool, err ops.Errno) {
	a.evals++
	adj := a.undo[w.pid]
	fresh := false // adj was made here (the entry was gone, see Exit)
	for i, s := range w.sops {
		v := a.sems[s.Num].val
		if wouldBlock(v, s.Op) {
			w.blocking = i
			a.rollback(w.sops[:i], adj)
			if s.NoWait {
				return false, ops.EAGAIN
			}
			return true, ops.OK
		}
		if v+s.Op > SemVMX || s.Undo && !adjFits(adj, s) {
			a.rollback(w.sops[:i], adj)
			return false, ops.ERANGE
		}
		if s.Undo {
			if adj == nil {
				adj, fresh = make([]int, len(a.sems)), true
			}
			adj[s.Num] -= s.Op
		}
		a.sems[s.Num].val = v + s.Op
	}
	for _, s := range w.sops {
		a.sems[s.Num].pid = w.pid
	}
	if fresh {
		a.undo[w.pid] = adj
	}
	return false, ops.OK
}

// wouldBlock says whether a sop of op on value v must wait.
func wouldBlock(v, op int) bool { return op == 0 && v != 0 || v+op < 0 }

// adjFits says whether semadj stays in range after s (SEM_UNDO).
func adjFits(adj []int, s Sop) bool {
	cur := 0
	if adj != nil {
		cur = adj[s.Num]
	}
	u := cur - s.Op
	return u >= SemadjMin && u <= SemadjMax
}

// rollback undoes sops that perform applied, last first.
func (a *Array) rollback(sops []Sop, adj []int) {
	for i := len(sops) - 1; i >= 0; i-- {
		s := sops[i]
		a.sems[s.Num].val -= s.Op
		if s.Undo {
			adj[s.Num] += s.Op
		}
	}
}

// smartUpdate is do_smart_update(sops, otime): after the values changed,
// complete every sleeper that can now proceed. sops nil means ALL (SETVAL,
// SETALL, exit): every semaphore may have changed. First the wait-for-zero
// pass; then, if the global alter queue holds anything, that queue
// (update_queue(-1)); otherwise the per-semaphore alter queues of every
// semaphore for ALL, or of each semaphore that a sop increased. Finally
// otime is set if forced or if some sleeper succeeded.
func (a *Array) smartUpdate(sops []Sop, otime bool) {
	if a.opt.Quirk != QuirkAlterBeforeZero && a.wakeZero(sops) {
		otime = true
	}
	switch {
	case !a.q.empty(gAlter()):
		otime = a.updateQueue(gAlter()) || otime
	case sops == nil:
		for k := range a.sems {
			otime = a.updateQueue(alterOf(k)) || otime
		}
	default:
		// Without complex operations pending, every sleeper decrements:
		// only a semaphore that went up can let one proceed.
		for _, s := range sops {
			if s.Op > 0 {
				otime = a.updateQueue(alterOf(s.Num)) || otime
			}
		}
	}
	if a.opt.Quirk == QuirkAlterBeforeZero && a.wakeZero(sops) {
		otime = true
	}
	if otime {
		a.setOtime(sops)
	}
}

// setOtime is set_semotime: the otime of the first sop's semaphore, or of
// semaphore 0 for ALL.
func (a *Array) setOtime(sops []Sop) {
	k := 0
	if sops != nil {
		k = sops[0].Num
	}
	a.sems[k].otime = true
}

// wakeZero is do_smart_wakeup_zero(sops): for each sop's semaphore (each
// semaphore for ALL; a semaphore named twice is looked at twice) whose value
// is 0, the simple wait-for-zero queue of that semaphore; then, if any of
// them was 0, the global queue of complex wait-for-zero operations. It
// reports whether some sleeper succeeded.
func (a *Array) wakeZero(sops []Sop) bool {
	completed, gotZero := false, false
	visit := func(k int) {
		if a.sems[k].val == 0 {
			gotZero = true
			completed = a.wakeConst(constOf(k)) || completed
		}
	}
	if sops == nil {
		for k := range a.sems {
			visit(k)
		}
	} else {
		for _, s := range sops {
			visit(s.Num)
		}
	}
	if gotZero {
		completed = a.wakeConst(gConst()) || completed
	}
	return completed
}

// wakeConst is wake_const_ops: every operation of a wait-for-zero queue
// is evaluated once, in order; those that no longer block complete with
// their result. It reports whether one succeeded.
func (a *Array) wakeConst(l queueID) bool {
	completed := false
	a.q.each(l, func(w *waiter) bool {
		blocked, err := a.perform(w)
		if blocked {
			return true
		}
		a.finish(w, err)
		completed = completed || err == ops.OK
		return true
	})
	return completed
}

// updateQueue is update_queue(l) for an alter queue: walk it in order and
// complete every operation that no longer blocks. After a success, the
// wait-for-zero pass runs on that operation's sops, and the walk starts
// again from the head if checkRestart says so; an error (ERANGE, EAGAIN)
// does not restart. A per-semaphore queue is walked only while its
// semaphore is not 0 (all its operations are decrements). It reports
// whether an operation succeeded.
func (a *Array) updateQueue(l queueID) bool {
	completed := false
	for {
		restart := false
		a.q.each(l, func(w *waiter) bool {
			if l.perSem() && a.sems[l.sem].val == 0 {
				return false
			}
			blocked, err := a.perform(w)
			if blocked {
				return true
			}
			a.finish(w, err)
			if err != ops.OK {
				return true
			}
			completed = true
			a.wakeZero(w.sops)
			restart = a.checkRestart(w)
			return !restart
		})
		if !restart {
			return completed
		}
	}
}

// checkRestart is check_restart: after the sleeper w succeeded, must the
// walk start again from the head? Yes while the global alter queue holds
// anything (complex operations are too hard to analyse) or if w was
// complex. A simple sleeper that succeeded decremented its semaphore, which
// cannot let an older decrement of the same semaphore proceed.
func (a *Array) checkRestart(w *waiter) bool {
	if a.opt.Quirk == QuirkNoRestartAfterComplex && w.complex() {
		return false
	}
	return !a.q.empty(gAlter()) || w.complex()
}
