package semq

import "slices"

// scanQueues is the Scan structure: the pending operations in arrival
// order, and nothing else that lasts. The kernel's queues are derived from
// the list each time one is needed:
//
//   - global mode holds for a whole operation when, at its start, some
//     complex operation is pending (the kernel merges the alter queues when
//     the first complex operation blocks and unmerges them only when it
//     unlocks with none left, so during a wake-up the mode stays as it was
//     at the start even after the last complex operation completed; and an
//     operation that blocks is queued last, after every wake-up);
//   - const[k]: the simple wait-for-zero operations on k;
//   - g_const: the complex wait-for-zero operations;
//   - g_alter: in global mode every operation that alters, else none;
//   - alter[k]: outside global mode, the (simple) alter operations on k.
//
// Every queue is in arrival order. The kernel's global alter queue starts
// instead with the simple operations it merged, grouped by semaphore
// (semaphore n-1 first); this never changes an outcome, because simple
// operations on different semaphores do not compete: each one's result
// depends only on its own semaphore, and the walk restarts from the head
// after every success.
type scanQueues struct {
	a      *Array
	list   []*waiter // arrival order
	global bool      // derived by lock for the current operation
}

// visit counts a scan of the whole list (Evaluations).
func (s *scanQueues) visit() { s.a.evals += int64(len(s.list)) }

// lock derives the mode for the operation: global while a complex
// operation is pending.
func (s *scanQueues) lock() {
	s.visit()
	s.global = slices.ContainsFunc(s.list, (*waiter).complex)
}

func (s *scanQueues) unlock() {}

func (s *scanQueues) enqueue(w *waiter) { s.list = append(s.list, w) }

func (s *scanQueues) unlink(w *waiter) {
	i := slices.Index(s.list, w)
	s.list = slices.Delete(s.list, i, i+1)
}

// in says whether w is on queue l, by the rules of the type comment.
func (s *scanQueues) in(l queueID, w *waiter) bool {
	switch l.kind {
	case constQueue:
		return !w.alter && !w.complex() && w.sops[0].Num == l.sem
	case globalConst:
		return !w.alter && w.complex()
	case globalAlter:
		return s.global && w.alter
	}
	return !s.global && w.alter && w.sops[0].Num == l.sem
}

// modeEmpty says whether the mode alone empties queue l: the global alter
// queue outside global mode, the per-semaphore alter queues in it. No
// scan is needed (or counted) for those.
func (s *scanQueues) modeEmpty(l queueID) bool {
	return l.kind == globalAlter && !s.global || l.kind == alterQueue && s.global
}

// queue derives queue l from the list.
func (s *scanQueues) queue(l queueID) []*waiter {
	if s.modeEmpty(l) {
		return nil
	}
	s.visit()
	var q []*waiter
	for _, w := range s.list {
		if s.in(l, w) {
			q = append(q, w)
		}
	}
	return q
}

func (s *scanQueues) each(l queueID, fn func(*waiter) bool) {
	for _, w := range s.queue(l) {
		if !fn(w) {
			return
		}
	}
}

func (s *scanQueues) empty(l queueID) bool {
	if s.modeEmpty(l) {
		return true
	}
	s.visit()
	return !slices.ContainsFunc(s.list, func(w *waiter) bool { return s.in(l, w) })
}

func (s *scanQueues) all() []*waiter { return slices.Clone(s.list) }

// count is GETNCNT/GETZCNT by their definition: the pending operations
// blocked at a sop on n of the right sign.
func (s *scanQueues) count(n int, zero bool) int {
	c := 0
	for _, w := range s.list {
		if blockedAt(w, n, zero) {
			c++
		}
	}
	return c
}

// legacyCount sums legacySops over the pending operations that alter
// (GETNCNT) or only wait for zero (GETZCNT).
func (s *scanQueues) legacyCount(n int, zero bool) int {
	c := 0
	for _, w := range s.list {
		if w.alter != zero {
			c += legacySops(w, n, zero)
		}
	}
	return c
}

func (s *scanQueues) clone(a *Array, byTask map[int]*waiter) structure {
	c := &scanQueues{a: a, global: s.global, list: make([]*waiter, len(s.list))}
	for i, w := range s.list {
		c.list[i] = byTask[w.task]
	}
	return c
}
