package msgq

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Env is what an operation needs from its namespace.
type Env struct {
	Policy Policy
	Perm   Perm
	Msgmax int64
}

// Call is the caller's own result: an errno, blocked, or a received message.
type Call struct {
	Err     ops.Errno
	Blocked bool
	Msg     Msg // msgrcv: the message, truncated to what the caller could take
}

// sim is one interleaving being explored: the queue, the woken tasks that
// have not run yet, and what completed.
type sim struct {
	q       *Queue
	pending []int // woken tasks, in the order they were woken
	// spurious are the senders the wake-all policy woke while their
	// message did not fit: since 4.9 they would not have been woken.
	spurious []int
	done     []Completion
	counters Counters
}

func (s *sim) clone() *sim {
	c := &sim{q: s.q.clone(), counters: s.counters}
	c.pending = append([]int(nil), s.pending...)
	c.spurious = append([]int(nil), s.spurious...)
	c.done = append([]Completion(nil), s.done...)
	return c
}

func (s *sim) isPending(task int) bool {
	for _, t := range s.pending {
		if t == task {
			return true
		}
	}
	return false
}

func (s *sim) wake(task int) {
	if !s.isPending(task) {
		s.pending = append(s.pending, task)
	}
}

// drop removes task from the list and says whether it was there.
func drop(list *[]int, task int) bool {
	for i, t := range *list {
		if t == task {
			*list = append((*list)[:i], (*list)[i+1:]...)
			return true
		}
	}
	return false
}

func (s *sim) unpend(task int) { drop(&s.pending, task) }

// Send is msgsnd by w.Task (w.Msg, w.As) after the argument and id checks.
func Send(q *Queue, env Env, w Waiter, nowait bool) (Call, []Outcome) {
	s := &sim{q: q.clone()}
	if !env.Perm(w.As, true) {
		return Call{Err: ops.EACCES}, s.outcomes(env)
	}
	if !s.q.fits(w.Msg.Size()) {
		if nowait {
			return Call{Err: ops.EAGAIN}, s.outcomes(env)
		}
		s.q.Senders = append(s.q.Senders, w)
		return Call{Blocked: true}, s.outcomes(env)
	}
	s.commit(w)
	return Call{}, s.outcomes(env)
}

// commit is the success path of msgsnd: pipelined send, or queue the message.
func (s *sim) commit(w Waiter) {
	q := s.q
	q.Lspid, q.Stime = w.Pid, true
	m := w.Msg
	lifo := q.Quirks&QuirkReceiversLIFO != 0
	for n := 0; n < len(q.Receivers); {
		i := n
		if lifo {
			i = len(q.Receivers) - 1 - n
		}
		r := q.Receivers[i]
		if !accepts(r.Mode, r.Bound, m) || (r.maxSize() < m.Size() && q.Quirks&QuirkE2BIGStays != 0) {
			n++
			continue
		}
		q.Receivers = append(q.Receivers[:i], q.Receivers[i+1:]...)
		s.unpend(r.Task)
		if r.maxSize() < m.Size() {
			s.done = append(s.done, Completion{Task: r.Task, Err: ops.E2BIG})
			continue
		}
		q.Lrpid, q.Rtime = r.Pid, true
		s.done = append(s.done, r.got(m))
		return
	}
	q.Msgs = append(q.Msgs, m)
	q.Cbytes += m.Size()
}

func truncate(m Msg, bufsize int64) Msg {
	if int64(len(m.Text)) > bufsize {
		m.Text = m.Text[:bufsize]
	}
	return m
}

// find searches the queue for what r wants (find_msg); -1 when nothing matches.
func (q *Queue) find(mode Mode, bound int64) int {
	found := -1
	for i, m := range q.Msgs {
		if !accepts(mode, bound, m) {
			continue
		}
		if mode != LessEqual {
			return i
		}
		if found < 0 || m.Type < q.Msgs[found].Type {
			found = i
			if m.Type == 1<<63-1 || m.Type == -1<<63 {
				return i
			}
		}
	}
	return found
}

// Receive is msgrcv by w.Task (its search, buffer and flags) after the
// argument and id checks. With copyMsg (MSG_COPY) w.Bound is the position.
func Receive(q *Queue, env Env, w Waiter, nowait, copyMsg bool) (Call, []Outcome) {
	s := &sim{q: q.clone()}
	if !env.Perm(w.As, false) {
		return Call{Err: ops.EACCES}, s.outcomes(env)
	}
	if copyMsg {
		if w.Bound < 0 || w.Bound >= s.q.Qnum() {
			return Call{Err: ops.ENOMSG}, s.outcomes(env)
		}
		m := s.q.Msgs[w.Bound]
		switch {
		case w.BufSize < m.Size() && !w.NoError:
			return Call{Err: ops.E2BIG}, s.outcomes(env)
		case w.NoError && min(w.BufSize, env.Msgmax) < m.Size():
			return Call{Err: ops.EINVAL}, s.outcomes(env)
		case w.BadBuf:
			return Call{Err: ops.EFAULT}, s.outcomes(env) // the copy-out; the message stays
		}
		return Call{Msg: m}, s.outcomes(env)
	}
	i := s.q.find(w.Mode, w.Bound)
	if i < 0 {
		if nowait {
			return Call{Err: ops.ENOMSG}, s.outcomes(env)
		}
		s.q.Receivers = append(s.q.Receivers, w)
		return Call{Blocked: true}, s.outcomes(env)
	}
	m := s.q.Msgs[i]
	if w.BufSize < m.Size() && !w.NoError {
		return Call{Err: ops.E2BIG}, s.outcomes(env)
	}
	s.take(i, w.Pid, env)
	if c := w.got(m); c.Err != ops.OK {
		return Call{Err: c.Err}, s.outcomes(env)
	}
	return Call{Msg: truncate(m, w.BufSize)}, s.outcomes(env)
}

// take removes message i for the receiver pid and wakes senders (ss_wakeup).
func (s *sim) take(i, pid int, env Env) {
	q := s.q
	q.Cbytes -= q.Msgs[i].Size()
	q.Msgs = append(q.Msgs[:i], q.Msgs[i+1:]...)
	q.Rtime, q.Lrpid = true, pid
	s.wakeSenders(env)
}

// wakeSenders is ss_wakeup(kill=false) under the policy.
func (s *sim) wakeSenders(env Env) {
	q := s.q
	if env.Policy == WakeAll {
		for _, w := range q.Senders {
			if !s.isPending(w.Task) {
				s.counters.Wakeups++
				s.wake(w.Task)
				if !q.fits(w.Msg.Size()) {
					s.spurious = append(s.spurious, w.Task)
				}
			}
		}
		return
	}
	var stay, moved []Waiter
	for _, w := range q.Senders {
		if !q.fits(w.Msg.Size()) {
			moved = append(moved, w)
			s.counters.Requeues++
			continue
		}
		stay = append(stay, w)
		if !s.isPending(w.Task) {
			s.counters.Wakeups++
			s.wake(w.Task)
		}
	}
	q.Senders = append(stay, moved...)
}

// Set is IPC_SET with the new qbytes (permissions are the caller's business:
// env.Perm already answers with the new mode): every sleeping receiver is
// woken to retry, then ss_wakeup runs.
func Set(q *Queue, env Env, qbytes int64) []Outcome {
	s := &sim{q: q.clone()}
	s.q.Qbytes = qbytes
	for _, r := range s.q.Receivers {
		s.wake(r.Task)
	}
	s.wakeSenders(env)
	return s.outcomes(env)
}

// Remove is IPC_RMID: every sleeper returns EIDRM.
func Remove(q *Queue) []Completion {
	var done []Completion
	for _, w := range q.Senders {
		done = append(done, Completion{Task: w.Task, Err: ops.EIDRM})
	}
	for _, w := range q.Receivers {
		done = append(done, Completion{Task: w.Task, Err: ops.EIDRM})
	}
	sortDone(done)
	return done
}

// run lets a woken task run: it leaves the list and goes round its loop once.
func (s *sim) run(task int, env Env) {
	s.unpend(task)
	q := s.q
	for i, w := range q.Senders {
		if w.Task != task {
			continue
		}
		q.Senders = append(q.Senders[:i], q.Senders[i+1:]...)
		spurious := drop(&s.spurious, task) // it was woken spuriously
		switch {
		case spurious && !q.fits(w.Msg.Size()):
			// Woken only by the wake-all: it goes back to sleep before
			// it looks at its permission, as the current kernel leaves it
			// asleep. (Before 4.9 it re-checked permission first, so a
			// sender whose write permission IPC_SET took away got EACCES
			// at once; since 4.9 it sleeps until its message fits.)
			q.Senders = append(q.Senders, w)
			s.counters.Spurious++
			s.counters.Requeues++
		case !env.Perm(w.As, true):
			s.done = append(s.done, Completion{Task: task, Err: ops.EACCES})
		case q.fits(w.Msg.Size()):
			s.commit(w)
			s.done = append(s.done, Completion{Task: task})
		default:
			q.Senders = append(q.Senders, w)
			s.counters.Spurious++
			s.counters.Requeues++
		}
		return
	}
	for i, w := range q.Receivers {
		if w.Task != task {
			continue
		}
		q.Receivers = append(q.Receivers[:i], q.Receivers[i+1:]...)
		if !env.Perm(w.As, false) {
			s.done = append(s.done, Completion{Task: task, Err: ops.EACCES})
			return
		}
		j := q.find(w.Mode, w.Bound)
		switch {
		case j < 0:
			q.Receivers = append(q.Receivers, w)
		case w.BufSize < q.Msgs[j].Size() && !w.NoError:
			s.done = append(s.done, Completion{Task: task, Err: ops.E2BIG})
		default:
			m := q.Msgs[j]
			s.take(j, w.Pid, env)
			s.done = append(s.done, w.got(m))
		}
		return
	}
	// Already completed (a pipelined send handed it a message): nothing to do.
}

// MaxExplore is the most woken tasks whose every running order outcomes
// explores (ops.MaxRacingWakeups, 5! orders); with more (a script that puts
// more to sleep on one queue, or a workload), they run in the order they
// were woken.
const MaxExplore = ops.MaxRacingWakeups

// outcomes explores every order in which the pending tasks may run and
// returns the distinct results, the first being the one where tasks run in
// the order they were woken.
func (s *sim) outcomes(env Env) []Outcome {
	if len(s.pending) > MaxExplore {
		for len(s.pending) > 0 {
			s.run(s.pending[0], env)
		}
		sortDone(s.done)
		return []Outcome{{Q: s.q, Done: s.done, Counters: s.counters, Racing: true}}
	}
	var out []Outcome
	seen := map[string]bool{}
	visited := map[string]bool{}
	var explore func(s *sim)
	explore = func(s *sim) {
		if len(s.pending) == 0 {
			sortDone(s.done)
			o := Outcome{Q: s.q, Done: s.done, Counters: s.counters}
			if k := o.Key(); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
			return
		}
		key := s.q.key() + pendingKey(s)
		if visited[key] {
			return
		}
		visited[key] = true
		for _, t := range s.pending {
			c := s.clone()
			c.run(t, env)
			explore(c)
		}
	}
	explore(s)
	if len(out) > 1 {
		for i := range out {
			out[i].Racing = true
		}
	}
	return out
}

func pendingKey(s *sim) string {
	k := "#"
	for _, t := range s.pending {
		k += itoa(int64(t)) + ","
	}
	for _, d := range s.done {
		k += d.key()
	}
	return k
}

// Interrupt is a signal to task, asleep on q as a sender or a receiver: it
// leaves the queue and returns EINTR; nobody else is woken. It reports
// false when the task does not sleep on q.
func Interrupt(q *Queue, task int) (*Queue, bool) {
	c := q.clone()
	for i, w := range c.Senders {
		if w.Task == task {
			c.Senders = append(c.Senders[:i], c.Senders[i+1:]...)
			return c, true
		}
	}
	for i, w := range c.Receivers {
		if w.Task == task {
			c.Receivers = append(c.Receivers[:i], c.Receivers[i+1:]...)
			return c, true
		}
	}
	return q, false
}
