package semq

// wlist is a doubly linked FIFO of pending operations (a list_head).
type wlist struct {
	head, tail *waiter
	n          int
}

func (l *wlist) pushBack(w *waiter) {
	w.on, w.prev, w.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *wlist) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next, w.on = nil, nil, nil
	l.n--
}

// spliceFront moves every operation of src, in order, to the front of l
// (list_splice_init(src, l)).
func (l *wlist) spliceFront(src *wlist) {
	if src.head == nil {
		return
	}
	for w := src.head; w != nil; w = w.next {
		w.on = l
	}
	src.tail.next = l.head
	if l.head != nil {
		l.head.prev = src.tail
	} else {
		l.tail = src.tail
	}
	l.head = src.head
	l.n += src.n
	*src = wlist{}
}

// perSem is the PerSemaphore structure: the lists of struct sem and struct
// sem_array in Linux 6.x.
type perSem struct {
	alter, cnst    []wlist // per semaphore: simple alter / simple wait-for-zero
	gAlter, gConst wlist   // global: every alter op while complex ops pend / complex wait-for-zero
	complexCount   int     // pending complex operations
}

func newPerSem(nsems int) *perSem {
	return &perSem{alter: make([]wlist, nsems), cnst: make([]wlist, nsems)}
}

func (p *perSem) list(l queueID) *wlist {
	switch l.kind {
	case alterQueue:
		return &p.alter[l.sem]
	case constQueue:
		return &p.cnst[l.sem]
	case globalAlter:
		return &p.gAlter
	}
	return &p.gConst
}

func (p *perSem) lock() {}

// unlock is sem_unlock's unmerge_queues: when no complex operation is left,
// the simple operations on the global alter queue go back to their
// semaphores' queues, in their order.
func (p *perSem) unlock() {
	if p.complexCount > 0 {
		return
	}
	for w := p.gAlter.head; w != nil; {
		next := w.next
		p.gAlter.remove(w)
		p.alter[w.sops[0].Num].pushBack(w)
		w = next
	}
}

// enqueue is the queueing of semtimedop. A simple operation goes to its
// semaphore's queue, or to the global alter queue if it alters while
// complex operations pend. A complex one goes to a global queue; the first
// one merges every per-semaphore alter queue into the global alter queue
// first (merge_queues).
func (p *perSem) enqueue(w *waiter) {
	if !w.complex() {
		k := w.sops[0].Num
		switch {
		case !w.alter:
			p.cnst[k].pushBack(w)
		case p.complexCount > 0:
			p.gAlter.pushBack(w)
		default:
			p.alter[k].pushBack(w)
		}
		return
	}
	if p.complexCount == 0 {
		p.merge()
	}
	if w.alter {
		p.gAlter.pushBack(w)
	} else {
		p.gConst.pushBack(w)
	}
	p.complexCount++
}

// merge is merge_queues: each semaphore's alter queue is spliced to the
// front of the global one, semaphore 0 first, so that the global queue
// ends up holding semaphore n-1's operations, ..., then semaphore 0's.
func (p *perSem) merge() {
	for k := range p.alter {
		p.gAlter.spliceFront(&p.alter[k])
	}
}

func (p *perSem) unlink(w *waiter) {
	w.on.remove(w)
	if w.complex() {
		p.complexCount--
	}
}

func (p *perSem) each(l queueID, fn func(*waiter) bool) {
	for w := p.list(l).head; w != nil; {
		next := w.next
		if !fn(w) {
			return
		}
		w = next
	}
}

func (p *perSem) empty(l queueID) bool { return p.list(l).n == 0 }

func (p *perSem) all() []*waiter {
	var ws []*waiter
	add := func(l *wlist) {
		for w := l.head; w != nil; w = w.next {
			ws = append(ws, w)
		}
	}
	add(&p.gConst)
	add(&p.gAlter)
	for k := range p.alter {
		add(&p.cnst[k])
		add(&p.alter[k])
	}
	return ws
}

// count is count_semcnt: every operation on semaphore n's own queue sleeps
// on n; a complex one (and a simple one on the global queue) counts if
// the sop it is blocked at (check_qop) is on n with the right sign.
func (p *perSem) count(n int, zero bool) int {
	c := p.alter[n].n
	if zero {
		c = p.cnst[n].n
	}
	blockedOn := func(l *wlist) {
		for w := l.head; w != nil; w = w.next {
			if blockedAt(w, n, zero) {
				c++
			}
		}
	}
	blockedOn(&p.gAlter)
	if zero {
		blockedOn(&p.gConst)
	}
	return c
}

// blockedAt is check_qop: w's blocking sop is on n, a wait-for-zero if
// zero, a decrement otherwise.
func blockedAt(w *waiter, n int, zero bool) bool {
	s := w.sops[w.blocking]
	return s.Num == n && (s.Op == 0) == zero && s.Op <= 0
}

// legacyCount is count_semncnt / count_semzcnt of Linux 3.10 to 3.15: for
// GETNCNT the alter queues (semaphore n's own and the global one), for
// GETZCNT the wait-for-zero queues, each operation counting its sops on n
// that could wait (see Options.LegacyCount).
func (p *perSem) legacyCount(n int, zero bool) int {
	c := 0
	sum := func(l *wlist) {
		for w := l.head; w != nil; w = w.next {
			c += legacySops(w, n, zero)
		}
	}
	if zero {
		sum(&p.cnst[n])
		sum(&p.gConst)
	} else {
		sum(&p.alter[n])
		sum(&p.gAlter)
	}
	return c
}

// legacySops counts w's sops on n without IPC_NOWAIT that wait for zero
// (zero) or decrement.
func legacySops(w *waiter, n int, zero bool) int {
	c := 0
	for _, s := range w.sops {
		if s.Num == n && !s.NoWait && (s.Op == 0) == zero && s.Op <= 0 {
			c++
		}
	}
	return c
}

func (p *perSem) clone(_ *Array, byTask map[int]*waiter) structure {
	c := newPerSem(len(p.alter))
	c.complexCount = p.complexCount
	copyList := func(dst, src *wlist) {
		for w := src.head; w != nil; w = w.next {
			dst.pushBack(byTask[w.task])
		}
	}
	for k := range p.alter {
		copyList(&c.alter[k], &p.alter[k])
		copyList(&c.cnst[k], &p.cnst[k])
	}
	copyList(&c.gAlter, &p.gAlter)
	copyList(&c.gConst, &p.gConst)
	return c
}
