package ipcns

import (
	"math"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
)

// Message queues. Each queue keeps the states it may be in (Obj.MsgQ): an
// operation that wakes several tasks can end in several allowed ways, and
// the kernel's way is only partly visible. Every operation runs on every
// state; the results are grouped by their text; the group the other side
// reported (when following) or the first one is kept. So the model never
// calls an allowed behaviour a divergence, and never loses one either.

// maxQueueStates bounds the states kept per queue. A wake-up of the four
// tasks' senders lets them append in any of 4! = 24 orders; two such
// wake-ups with no receive in between already make 576 states, which a bound
// of 256 cut, dropping the kernel's order in half the replays of
// corpus/msg/wake-all-twice-unobserved.ops. Past the bound the first states
// are kept, and a divergence on a dropped order shows as FLAKY (it does not
// reproduce when the script runs again).
const maxQueueStates = 4096

// Message-queue constants of ipc/msg.c and msgctl IPC_INFO.
const (
	msgPool = 512000 // MSGPOOL
	msgMap  = ops.DefaultMsgmnb
	msgTql  = ops.DefaultMsgmnb
	msgSsz  = 16
	msgSeg  = 65535
)

// newQueue is the state of a queue msgget just created.
func (ns *Namespace) newQueue(o *Obj) {
	q := msgq.NewQueue(ops.DefaultMsgmnb)
	q.Quirks = ns.msgQuirks
	o.MsgQ = []*msgq.Queue{q}
}

func (ns *Namespace) msgEnv(o *Obj) msgq.Env {
	return msgq.Env{
		Policy: ns.msgPolicy,
		Msgmax: ops.DefaultMsgmax,
		Perm: func(as uint32, write bool) bool {
			if write {
				return permitted(o, as, 0o222)
			}
			return permitted(o, as, 0o444)
		},
	}
}

// busy reports whether a task sleeps in an earlier msgsnd or msgrcv.
func (ns *Namespace) busy(task uint8) bool { return ns.asleep[task] != nil }

func init() {
	handlers.Add((*Namespace).msgsnd, ops.KindMsgsnd)
	handlers.Add((*Namespace).msgrcv, ops.KindMsgrcv)
	handlers.Add((*Namespace).msgctl, ops.KindMsgctl)
}

func (ns *Namespace) lookupMsg(id int64) *Obj { return ns.cur.types[ops.Msg].lookup(id) }

// msgsnd checks in the order of ipc-spec.md 2.3, then sends.
func (ns *Namespace) msgsnd(op ops.Op, other *ops.Result) ops.Result {
	if op.BadBuf {
		return ops.Result{Err: ops.EFAULT} // reading mtype comes before every check
	}
	if op.Size > ops.DefaultMsgmax || op.Size < 0 || int32(op.Obj.ID) < 0 || op.Mtype < 1 {
		return ops.Result{Err: ops.EINVAL}
	}
	o := ns.lookupMsg(op.Obj.ID)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	w := msgq.Waiter{Task: int(op.Task), Pid: int(ns.taskPID(op.Task)), As: op.As,
		Msg: msgq.Msg{Type: op.Mtype, Text: ops.MsgText(op.Fill, op.Size)}}
	env := ns.msgEnv(o)
	return ns.step(o, op, other, func(q *msgq.Queue) (msgq.Call, []msgq.Outcome) {
		return msgq.Send(q, env, w, op.MsgFlags&ops.MsgNowait != 0)
	})
}

// msgrcv checks in the order of ipc-spec.md 2.4, then receives.
func (ns *Namespace) msgrcv(op ops.Op, other *ops.Result) ops.Result {
	if int32(op.Obj.ID) < 0 || op.Size < 0 {
		return ops.Result{Err: ops.EINVAL}
	}
	copyMsg := op.MsgFlags&ops.MsgCopy != 0
	nowait := op.MsgFlags&ops.MsgNowait != 0
	if copyMsg && (op.MsgFlags&ops.MsgExcept != 0 || !nowait) {
		return ops.Result{Err: ops.EINVAL}
	}
	if copyMsg && op.BadBuf && min(op.Size, ops.DefaultMsgmax) > 0 {
		// The copy buffer (min(msgsz, msgmax) bytes of it) is read from the
		// user before the lookup; with 0 bytes nothing is read, and the
		// copy-out fails instead, if it comes to it.
		return ops.Result{Err: ops.EFAULT}
	}
	o := ns.lookupMsg(op.Obj.ID)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	mode, bound := msgq.SearchMode(op.Mtype, op.MsgFlags&ops.MsgExcept != 0, copyMsg)
	w := msgq.Waiter{Task: int(op.Task), Pid: int(ns.taskPID(op.Task)), As: op.As,
		Mode: mode, Bound: bound, BufSize: op.Size, NoError: op.MsgFlags&ops.MsgNoerror != 0, BadBuf: op.BadBuf}
	env := ns.msgEnv(o)
	return ns.step(o, op, other, func(q *msgq.Queue) (msgq.Call, []msgq.Outcome) {
		return msgq.Receive(q, env, w, nowait, copyMsg)
	})
}

// step runs f on every state of o's queue, groups the results and keeps the
// group that other names (or the first).
func (ns *Namespace) step(o *Obj, op ops.Op, other *ops.Result, f func(*msgq.Queue) (msgq.Call, []msgq.Outcome)) ops.Result {
	type group struct {
		r  ops.Result
		qs []*msgq.Queue
		c  msgq.Counters
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, q := range o.MsgQ {
		call, outs := f(q)
		for _, out := range outs {
			r := toResult(call, out)
			k := ops.FormatResult(op, r)
			g := byKey[k]
			if g == nil {
				g = &group{r: r, c: out.Counters}
				byKey[k] = g
				groups = append(groups, g)
			}
			g.qs = append(g.qs, out.Q)
		}
	}
	pick := groups[0]
	if other != nil {
		if g := byKey[ops.FormatResult(op, *other)]; g != nil {
			pick = g
		}
	}
	o.MsgQ = dedupQueues(pick.qs)
	ns.msgWork.add(op.Kind, pick.c)
	for _, c := range pick.r.Done {
		ns.asleep[c.Task] = nil
	}
	if pick.r.Blocked {
		ns.asleep[op.Task] = o
	}
	if len(groups) > 1 {
		pick.r.Alternatives = len(groups)
	}
	return pick.r
}

func dedupQueues(qs []*msgq.Queue) []*msgq.Queue {
	seen := map[string]bool{}
	var out []*msgq.Queue
	for _, q := range qs {
		k := (msgq.Outcome{Q: q}).Key()
		if !seen[k] && len(out) < maxQueueStates {
			seen[k] = true
			out = append(out, q)
		}
	}
	return out
}

func toResult(call msgq.Call, out msgq.Outcome) ops.Result {
	r := ops.Result{Err: call.Err, Blocked: call.Blocked}
	if call.Err == ops.OK && !call.Blocked && call.Msg.Type != 0 {
		r.Msg = ops.Message{Type: call.Msg.Type, Text: call.Msg.Text}
	}
	r.Done = completions(out.Done)
	return r
}

func completions(done []msgq.Completion) []ops.Completion {
	if len(done) == 0 {
		return nil
	}
	out := make([]ops.Completion, len(done))
	for i, c := range done {
		out[i] = ops.Completion{Task: uint8(c.Task), Err: c.Err}
		if c.Err == ops.OK && c.Msg.Type != 0 {
			out[i].Recv = true
			out[i].Msg = ops.Message{Type: c.Msg.Type, Text: c.Msg.Text}
		}
	}
	ops.SortCompletions(out)
	return out
}

// msgRmid is IPC_RMID of a queue: every sleeper returns EIDRM.
func (ns *Namespace) msgRmid(o *Obj) []ops.Completion {
	done := completions(msgq.Remove(o.MsgQ[0]))
	for _, c := range done {
		ns.asleep[c.Task] = nil
	}
	return done
}

// msgctl is ipc-spec.md 2.7.
func (ns *Namespace) msgctl(op ops.Op, other *ops.Result) ops.Result {
	if int32(op.Obj.ID) < 0 || op.MCmd == ops.MsgInvalid {
		return ops.Result{Err: ops.EINVAL} // a negative id or command, before anything is looked up
	}
	s := ns.cur.types[ops.Msg]
	switch op.MCmd {
	case ops.MsgIPCInfo, ops.MsgInfoCmd:
		if op.BadBuf {
			return ops.Result{Err: ops.EFAULT} // the copy-out, after the values are computed
		}
		r := ops.Result{ID: s.maxIdx()}
		r.MsgInfo = ops.MsgInfo{Msgmax: ops.DefaultMsgmax, Msgmnb: ops.DefaultMsgmnb, Msgmni: s.limit,
			Msgssz: msgSsz, Msgseg: msgSeg, Msgpool: msgPool, Msgmap: msgMap, Msgtql: msgTql}
		if op.MCmd == ops.MsgInfoCmd {
			r.MsgInfo.Msgpool = int64(s.table.Len())
			objs := s.table.Listing()
			if other != nil && other.Err == ops.OK {
				keepTotals(objs, msgTotals{other.MsgInfo.Msgmap, other.MsgInfo.Msgtql})
			}
			r.MsgInfo.Msgmap, r.MsgInfo.Msgtql = 0, 0
			for _, o := range objs {
				q := o.MsgQ[0]
				r.MsgInfo.Msgmap += q.Qnum()
				r.MsgInfo.Msgtql += q.Cbytes
			}
		}
		return r
	case ops.MsgStat, ops.MsgStatAny:
		o := s.table.Get(ops.IDIdx(op.Obj.ID))
		if o == nil {
			return ops.Result{Err: ops.EINVAL}
		}
		if op.MCmd == ops.MsgStat && !permitted(o, op.As, 0o444) {
			return ops.Result{Err: ops.EACCES}
		}
		if op.BadBuf {
			return ops.Result{Err: ops.EFAULT}
		}
		r := ns.msgStat(o, op, other)
		r.ID, r.Row.ID = o.ID(), o.ID()
		return r
	}
	if op.MCmd == ops.MsgIPCSet && op.BadBuf {
		return ops.Result{Err: ops.EFAULT} // IPC_SET copies its struct in before the lookup
	}
	o := ns.lookupMsg(op.Obj.ID)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	switch op.MCmd {
	case ops.MsgIPCStat:
		if !permitted(o, op.As, 0o444) {
			return ops.Result{Err: ops.EACCES}
		}
		if op.BadBuf {
			return ops.Result{Err: ops.EFAULT}
		}
		return ns.msgStat(o, op, other)
	case ops.MsgIPCSet:
		if !ownerOrCreator(o, op.As) {
			return ops.Result{Err: ops.EPERM}
		}
		// qbytes travels as a C int: truncated to 32 bits, and a value with
		// the top bit set compares as huge (ipc-spec.md 2.7).
		qbytes := int64(uint32(op.Value))
		if qbytes > ops.DefaultMsgmnb && (op.As != 0 || !ns.capSysResource) {
			return ops.Result{Err: ops.EPERM}
		}
		if int32(qbytes) < 0 {
			qbytes = math.MaxInt64 // sign-extended into an unsigned long: no limit
		}
		group := op.GroupOr(o.GID)
		if group == math.MaxUint32 { // (gid_t)-1 maps to no group
			return ops.Result{Err: ops.EINVAL}
		}
		o.GID, o.Mode = group, op.Mode&0o777
		o.Ctime = true
		env := ns.msgEnv(o)
		return ns.step(o, op, other, func(q *msgq.Queue) (msgq.Call, []msgq.Outcome) {
			return msgq.Call{}, msgq.Set(q, env, qbytes)
		})
	}
	return ops.Result{Err: ops.EINVAL}
}

// msgStat fills the row and qbytes of a queue. Of the queue's states, those
// whose row other shows are kept (all of them: several may agree on the row
// and differ in what is still hidden), or, with none, the first one's.
func (ns *Namespace) msgStat(o *Obj, op ops.Op, other *ops.Result) ops.Result {
	stat := func(q *msgq.Queue) ops.Result {
		r := ops.Result{Row: msgRow(o, q), Qbytes: q.Qbytes}
		r.Row.ID = 0
		if op.MCmd != ops.MsgIPCStat {
			r.Row.ID = o.ID()
		}
		return r
	}
	want := stat(o.MsgQ[0])
	if other != nil {
		want = ops.Result{Row: other.Row, Qbytes: other.Qbytes}
	}
	o.keepStates(func(q *msgq.Queue) bool {
		r := stat(q)
		return r.Row == want.Row && r.Qbytes == want.Qbytes
	})
	return stat(o.MsgQ[0])
}

// keepStates keeps the queue states that match, unless none does (then
// nothing changes and the first state speaks: a divergence will show).
func (o *Obj) keepStates(match func(*msgq.Queue) bool) {
	var kept []*msgq.Queue
	for _, q := range o.MsgQ {
		if match(q) {
			kept = append(kept, q)
		}
	}
	if len(kept) > 0 {
		o.MsgQ = kept
	}
}

// msgRow is the /proc/sysvipc/msg row of a queue in state q.
func msgRow(o *Obj, q *msgq.Queue) ops.Row {
	r := rowOf(ops.Msg, o)
	r.Size, r.Qnum = q.Cbytes, q.Qnum()
	r.Cpid, r.Lpid = ops.PID(q.Lspid), ops.PID(q.Lrpid)
	r.Atime, r.Dtime = q.Stime, q.Rtime
	return r
}

// queueState is what a snapshot shows of a queue in state q.
func queueState(o *Obj, q *msgq.Queue) ops.QueueState {
	st := ops.QueueState{ID: o.ID(), Qbytes: q.Qbytes}
	for _, m := range q.Msgs {
		st.Msgs = append(st.Msgs, ops.Message{Type: m.Type, Text: m.Text})
	}
	for _, w := range q.Senders {
		st.Senders = append(st.Senders, uint8(w.Task))
	}
	for _, w := range q.Receivers {
		st.Receivers = append(st.Receivers, uint8(w.Task))
	}
	slices.Sort(st.Senders)
	slices.Sort(st.Receivers)
	return st
}

// chooseQueueState picks, for a snapshot, the state of o's queue whose row
// and queue state other shows (or the first).
func chooseQueueState(o *Obj, otherRow *ops.Row, otherQ *ops.QueueState) *msgq.Queue {
	if otherRow != nil && otherQ != nil {
		o.keepStates(func(q *msgq.Queue) bool {
			return msgRow(o, q) == *otherRow && equalQueueState(queueState(o, q), *otherQ)
		})
	}
	return o.MsgQ[0]
}

func equalQueueState(a, b ops.QueueState) bool {
	return a.ID == b.ID && a.Qbytes == b.Qbytes && slices.Equal(a.Msgs, b.Msgs) &&
		slices.Equal(a.Senders, b.Senders) && slices.Equal(a.Receivers, b.Receivers)
}

// msgInterrupt is a signal to a task asleep on queue o: it leaves every
// state of the queue with EINTR.
func (ns *Namespace) msgInterrupt(o *Obj, task int) {
	for i, q := range o.MsgQ {
		o.MsgQ[i], _ = msgq.Interrupt(q, task)
	}
	o.MsgQ = dedupQueues(o.MsgQ)
}

// msgTotals are the messages and bytes of some queues (MSG_INFO's msgmap
// and msgtql).
type msgTotals struct{ qnum, cbytes int64 }

// maxTotals bounds the partial sums keepTotals tracks.
const maxTotals = 1 << 16

// keepTotals keeps, of each queue's states, those that some choice of
// states of all the queues can complete to the totals want (what the other
// side's MSG_INFO reported), and puts first in each queue the states of one
// such choice, so that the first states of all queues add up to want. Where no choice does, nothing
// changes and the first states speak: a divergence will show.
func keepTotals(objs []*Obj, want msgTotals) {
	n := len(objs)
	// reach[i]: the totals the first i queues can add up to.
	reach := make([]map[msgTotals]bool, n+1)
	reach[0] = map[msgTotals]bool{{}: true}
	for i, o := range objs {
		reach[i+1] = map[msgTotals]bool{}
		for t := range reach[i] {
			for _, q := range o.MsgQ {
				reach[i+1][msgTotals{t.qnum + q.Qnum(), t.cbytes + q.Cbytes}] = true
			}
		}
		if len(reach[i+1]) > maxTotals {
			return
		}
	}
	if !reach[n][want] {
		return
	}
	// need[i]: the totals of the first i queues that the rest can
	// complete to want. A state of queue i is kept if it takes some total
	// of need[i] to one of need[i+1].
	need := make([]map[msgTotals]bool, n+1)
	need[n] = map[msgTotals]bool{want: true}
	for i := n - 1; i >= 0; i-- {
		need[i] = map[msgTotals]bool{}
		var kept []*msgq.Queue
		for _, q := range objs[i].MsgQ {
			ok := false
			for t := range need[i+1] {
				prev := msgTotals{t.qnum - q.Qnum(), t.cbytes - q.Cbytes}
				if reach[i][prev] {
					need[i][prev], ok = true, true
				}
			}
			if ok {
				kept = append(kept, q)
			}
		}
		objs[i].MsgQ = kept
	}
	// Put first, in each queue, a state of one choice that adds up to want.
	rest := want
	for i := n - 1; i >= 0; i-- {
		o := objs[i]
		for j, q := range o.MsgQ {
			prev := msgTotals{rest.qnum - q.Qnum(), rest.cbytes - q.Cbytes}
			if need[i][prev] {
				o.MsgQ[0], o.MsgQ[j] = o.MsgQ[j], o.MsgQ[0]
				rest = prev
				break
			}
		}
	}
}

// msgWork counts the work of the message operations for the complexity
// engine: the calls, and the sender wake-ups of the outcome kept (an
// IPC_SET that raises qbytes wakes senders too).
type msgWork struct {
	sends, receives, wakeups, spurious, requeues int64
}

func (w *msgWork) add(k ops.Kind, c msgq.Counters) {
	switch k {
	case ops.KindMsgsnd:
		w.sends++
	case ops.KindMsgrcv:
		w.receives++
	}
	w.wakeups += c.Wakeups
	w.spurious += c.Spurious
	w.requeues += c.Requeues
}
