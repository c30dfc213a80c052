// Package msg is the msg subsystem (SysV message queues with tasks that
// block) as the drivers see it: its generator and its registry value,
// Subsystem.
//
// The generator keeps a rough shadow of each queue (its capacity, what is
// queued, who sleeps on it) to steer the choices, and sets up races on
// purpose: small queues filled by the main task, several tasks asleep as
// senders with messages that fit once a receive frees space, receivers
// asleep before a send. The shadow only steers; it is never an oracle.
package msg

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Source is where the generator's choices come from.
type Source = engine.Source

type sleeper struct {
	queue int // handle
	send  bool
	size  int64
	mtype int64 // a receiver's msgtyp
}

type queue struct {
	handle int
	qbytes int64
	msgs   []int64 // sizes of queued messages (types are not tracked)
	mtypes []int64
	mode   uint16
	// owner is who created the queue: root, or (one queue in five) uid
	// 1000, whose own bits then decide for it.
	owner uint32
	// group: IPC_SET gave the queue uid 1000's group (gid=1000), so that
	// the mode's group bits decide for it.
	group bool
	live  bool
}

// may reports whether caller as may write (send) or read (receive) the
// queue: root always; uid 1000 by the mode's owner bits when it created
// the queue, by its group bits when the queue is in its group, else by
// the last three bits.
func (q *queue) may(as uint32, write bool) bool {
	if as == 0 {
		return true
	}
	bits := q.mode
	switch {
	case as == q.owner:
		bits >>= 6
	case q.group:
		bits >>= 3
	}
	if write {
		return bits&0o2 != 0
	}
	return bits&0o4 != 0
}

// caller draws, one time in six, an unprivileged caller (uid and gid 1000,
// no capability) for an operation whose permission check matters.
func caller(src Source) uint32 {
	if src.Intn(6, "unprivileged") == 0 {
		return 1000
	}
	return 0
}

func (q *queue) cbytes() int64 {
	var n int64
	for _, s := range q.msgs {
		n += s
	}
	return n
}

func (q *queue) fits(size int64) bool {
	return size+q.cbytes() <= q.qbytes && int64(len(q.msgs))+1 <= q.qbytes
}

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	queues     []*queue
	asleep     [ops.NumTasks]*sleeper
	nextHandle int
	swarm      engine.Swarm
	// pending are operations drawn ahead (a race set up at the start),
	// which Step hands out first.
	pending []ops.Op
}

// NewShadow returns the shadow of a fresh namespace, with swarm weights
// drawn from src; one script in two starts by setting up a race, one in
// eight with a permission scenario.
func NewShadow(src Source) *Shadow {
	s := &Shadow{swarm: engine.NewSwarm(src, int(numActions))}
	switch src.Intn(8, "setup") {
	case 0, 1, 2, 3:
		s.pending = s.raceSetup(src)
	case 4:
		s.pending = s.permSetup(src)
	case 5:
		s.pending = s.countSetup(src)
	}
	return s
}

// countSetup fills a queue to its message count. msg_fits_inqueue counts
// each message as a byte as well, so qbytes is also the most messages a
// queue holds, and messages of size 0 reach that count before the bytes:
// the last one that fits, then one that does not (EAGAIN, or a sender
// asleep until a receive makes room).
func (s *Shadow) countSetup(src Source) []ops.Op {
	out := []ops.Op{s.create(src)}
	q := s.queues[len(s.queues)-1]
	ref := ops.Ref{Handle: q.handle}
	n := int64(1 + src.Intn(3, "count"))
	out = append(out, ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: n, Mode: 0o600})
	q.qbytes, q.mode = n, 0o600
	for range n {
		out = append(out, ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, MsgFlags: ops.MsgNowait})
		q.msgs, q.mtypes = append(q.msgs, 0), append(q.mtypes, 1)
	}
	if src.Intn(2, "sleep") == 0 {
		out = append(out, ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 2, Task: 1})
		s.asleep[1] = &sleeper{queue: q.handle, send: true}
	} else {
		out = append(out, ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 2, MsgFlags: ops.MsgNowait})
	}
	return out
}

// permSetup puts a stranger (uid 1000) to sleep as a sender and another as
// a receiver on a queue whose mode lets others read and write, then has
// IPC_SET change the mode and make room: each sleeper is woken and must
// re-check its permission (write for the sender, read for the receiver)
// against the new mode.
func (s *Shadow) permSetup(src Source) []ops.Op {
	out := []ops.Op{s.create(src)}
	q := s.queues[len(s.queues)-1]
	ref := ops.Ref{Handle: q.handle}
	out = append(out,
		ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: 10, Mode: 0o666},
		ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, Size: 10, MsgFlags: ops.MsgNowait},
		ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 2, Size: 5, Task: 1, As: 1000},
		ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Mtype: 7, Size: 8, Task: 2, As: 1000})
	mode := pick(src, modePool, "new mode")
	out = append(out, ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: 100, Mode: mode})
	q.qbytes, q.mode = 100, mode
	q.msgs, q.mtypes = []int64{10}, []int64{1}
	if q.may(1000, true) {
		q.msgs, q.mtypes = append(q.msgs, 5), append(q.mtypes, 2)
	}
	if q.may(1000, false) {
		s.asleep[2] = &sleeper{queue: q.handle, mtype: 7}
	}
	return out
}

var (
	qbytesPool = []int64{0, 3, 16, 24, 30, 40, 60, 100, 100, 16384, ops.DefaultMsgmnb + 1, 1<<32 + 5}
	sizePool   = []int64{0, 1, 5, 8, 10, 10, 20, 30, 40, 60}
	typePool   = []int64{1, 1, 2, 3, 7}
	rtypePool  = []int64{0, 0, 1, 2, -2, 7, -9223372036854775808}
	bufPool    = []int64{0, 2, 8, 40, 64, 200}
	// modePool: what IPC_SET gives; a queue is created with one of the
	// first five. Others may write only (0602) or read only (0604, 0644),
	// so that a sleeping stranger's permission can be taken away; the
	// group's bits differ from the others' in the last four, for a queue
	// in uid 1000's group (groupPool).
	modePool = []uint16{0o600, 0o600, 0o666, 0o644, 0o602, 0o604, 0o400, 0o200, 0o640, 0o620, 0o660, 0o606}
	// groupPool: the gid IPC_SET gives (0: none, the queue keeps its own);
	// 1000 puts the unprivileged caller in the queue's group.
	groupPool = []uint32{0, 0, 0, 1000}
)

func pick[T any](src Source, pool []T, label string) T { return pool[src.Intn(len(pool), label)] }

func (s *Shadow) live() []*queue {
	var out []*queue
	for _, q := range s.queues {
		if q.live {
			out = append(out, q)
		}
	}
	return out
}

func (s *Shadow) freeTasks() []uint8 { return engine.FreeTasks(&s.asleep) }

type action uint8

const (
	actCreate action = iota
	actShrink
	actFill
	actBlockSend
	actBlockRecv
	actRecv
	actCopy
	actStat
	actInfo
	actSet
	actRmid
	actList
	actBusy
	actBad
	numActions
)

// Step draws one operation and advances the shadow by its expected effect.
func (s *Shadow) Step(src Source) ops.Op {
	if len(s.pending) > 0 {
		op := s.pending[0]
		s.pending = s.pending[1:]
		return op
	}
	qs := s.live()
	if len(qs) == 0 {
		return s.create(src)
	}
	menu := []action{actFill, actFill, actRecv, actRecv, actRecv, actStat, actList, actBad, actCopy, actInfo, actShrink}
	if len(s.queues) < 3 {
		menu = append(menu, actCreate)
	}
	if len(s.freeTasks()) > 0 {
		menu = append(menu, actBlockSend, actBlockSend, actBlockSend, actBlockRecv, actBlockRecv)
	}
	if len(s.freeTasks()) < ops.MaxTask {
		menu = append(menu, actBusy, actSet)
	}
	if src.Intn(12, "rmid?") == 0 {
		menu = append(menu, actRmid)
	}
	q := pick(src, qs, "queue")
	ref := ops.Ref{Handle: q.handle}
	switch engine.Choose(src, s.swarm, menu) {
	case actCreate:
		return s.create(src)
	case actShrink:
		v := pick(src, []int64{16, 24, 30, 40, 60, 100}, "qbytes")
		op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: v, Mode: 0o600}
		q.qbytes, q.mode = v, 0o600
		s.wakeAll(q)
		return op
	case actFill:
		size := pick(src, sizePool, "size")
		op := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: pick(src, typePool, "mtype"), Size: size,
			Fill: uint8(src.Intn(26, "fill")), MsgFlags: ops.MsgNowait, As: caller(src)}
		if q.may(op.As, true) && q.fits(size) {
			s.deliver(q, size, op.Mtype)
		}
		return op
	case actBlockSend:
		t := pick(src, s.freeTasks(), "task")
		size := pick(src, sizePool, "size")
		op := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: pick(src, typePool, "mtype"), Size: size,
			Fill: uint8(src.Intn(26, "fill")), Task: t, As: caller(src)}
		switch {
		case !q.may(op.As, true):
		case q.fits(size):
			s.deliver(q, size, op.Mtype)
		default:
			s.asleep[t] = &sleeper{queue: q.handle, send: true, size: size}
		}
		return op
	case actBlockRecv:
		t := pick(src, s.freeTasks(), "task")
		op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: pick(src, bufPool, "bufsize"),
			Mtype: pick(src, rtypePool, "msgtyp"), Task: t}
		if src.Intn(4, "noerror") == 0 {
			op.MsgFlags |= ops.MsgNoerror
		}
		if src.Intn(4, "except") == 0 {
			op.MsgFlags |= ops.MsgExcept // the kernel takes it with any msgtyp
		}
		op.As = caller(src)
		if q.may(op.As, false) && !s.take(q, op.Mtype) {
			s.asleep[t] = &sleeper{queue: q.handle, mtype: op.Mtype}
		}
		return op
	case actRecv:
		op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: pick(src, bufPool, "bufsize"),
			Mtype: pick(src, rtypePool, "msgtyp"), MsgFlags: ops.MsgNowait}
		if src.Intn(5, "noerror") == 0 {
			op.MsgFlags |= ops.MsgNoerror
		}
		if src.Intn(5, "except") == 0 {
			op.MsgFlags |= ops.MsgExcept
		}
		if src.Intn(4, "as task") == 0 && len(s.freeTasks()) > 0 {
			op.Task = pick(src, s.freeTasks(), "task")
		}
		if op.As = caller(src); q.may(op.As, false) {
			s.take(q, op.Mtype)
		}
		return op
	case actCopy:
		op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: pick(src, bufPool, "bufsize"),
			Mtype: int64(src.Intn(4, "position")) - 1, MsgFlags: ops.MsgNowait | ops.MsgCopy}
		if src.Intn(4, "noerror") == 0 {
			op.MsgFlags |= ops.MsgNoerror
		}
		return op
	case actStat:
		op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCStat}
		if src.Intn(3, "by index") == 0 {
			op.MCmd = pick(src, []ops.MsgCmd{ops.MsgStat, ops.MsgStatAny}, "cmd")
			op.Obj = ops.Ref{ID: int64(src.Intn(4, "index"))}
		}
		if src.Intn(5, "unprivileged") == 0 {
			op.As = 1000
		}
		return op
	case actInfo:
		return ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: pick(src, []ops.MsgCmd{ops.MsgIPCInfo, ops.MsgInfoCmd}, "cmd")}
	case actSet:
		v := pick(src, qbytesPool, "qbytes")
		op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: v, Mode: pick(src, modePool, "mode"), As: caller(src),
			Group: pick(src, groupPool, "gid")}
		if v <= ops.DefaultMsgmnb && (op.As == 0 || op.As == q.owner) {
			q.qbytes, q.mode = v, op.Mode
			q.group = q.group || op.Group == 1000
			s.wakeAll(q)
		}
		return op
	case actRmid:
		op := ops.Op{Kind: ops.KindRmid, Type: ops.Msg, Obj: ref, As: caller(src)}
		if op.As != 0 && op.As != q.owner {
			return op // EPERM: neither root nor the owner
		}
		q.live = false
		for t, sl := range s.asleep {
			if sl != nil && sl.queue == q.handle {
				s.asleep[t] = nil
			}
		}
		return op
	case actList:
		return ops.Op{Kind: ops.KindList, Type: ops.Msg, Rows: true}
	case actBusy:
		var busy []uint8
		for t := 1; t <= ops.MaxTask; t++ {
			if s.asleep[t] != nil {
				busy = append(busy, uint8(t))
			}
		}
		return ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCStat, Task: pick(src, busy, "task")}
	}
	// Deliberately bad arguments.
	switch src.Intn(6, "bad") {
	case 0:
		return ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 0, Size: 1, MsgFlags: ops.MsgNowait}
	case 1:
		return ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, Size: ops.DefaultMsgmax + 1, MsgFlags: ops.MsgNowait}
	case 2:
		return ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{ID: -1}, Size: 8, MsgFlags: ops.MsgNowait}
	case 3:
		return ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: 8, MsgFlags: ops.MsgCopy | ops.MsgExcept | ops.MsgNowait}
	case 4: // a negative size: EINVAL before anything else
		if src.Intn(2, "send") == 0 {
			return ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, Size: -1, MsgFlags: ops.MsgNowait}
		}
		return ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: -1, MsgFlags: ops.MsgNowait}
	}
	return ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ops.Ref{ID: ops.MakeID(65535, 3)}, Mtype: 1, Size: 1, MsgFlags: ops.MsgNowait}
}

func (s *Shadow) create(src Source) ops.Op {
	s.nextHandle++
	q := &queue{handle: s.nextHandle, qbytes: ops.DefaultMsgmnb, mode: pick(src, modePool[:5], "mode"), live: true}
	if src.Intn(5, "owned by uid 1000") == 0 {
		q.owner = 1000
	}
	s.queues = append(s.queues, q)
	return ops.Op{Kind: ops.KindGet, Type: ops.Msg, Bind: q.handle, Key: ops.IPCPrivate, Mode: q.mode, As: q.owner}
}

// deliver hands a sent message to a sleeping receiver or queues it.
func (s *Shadow) deliver(q *queue, size, mtype int64) {
	for t, sl := range s.asleep {
		if sl != nil && sl.queue == q.handle && !sl.send && (sl.mtype == 0 || sl.mtype == mtype || (sl.mtype < 0 && mtype <= -sl.mtype)) {
			s.asleep[t] = nil
			return
		}
	}
	q.msgs = append(q.msgs, size)
	q.mtypes = append(q.mtypes, mtype)
}

// take removes a message a receive of msgtyp would get, and lets senders in.
func (s *Shadow) take(q *queue, msgtyp int64) bool {
	for i, t := range q.mtypes {
		if msgtyp == 0 || t == msgtyp || (msgtyp < 0 && t <= -msgtyp) {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			q.mtypes = append(q.mtypes[:i], q.mtypes[i+1:]...)
			s.wakeAll(q)
			return true
		}
	}
	return false
}

// wakeAll lets the sleeping senders that fit in, in task order.
func (s *Shadow) wakeAll(q *queue) {
	for t, sl := range s.asleep {
		if sl != nil && sl.queue == q.handle && sl.send && q.fits(sl.size) {
			s.asleep[t] = nil
			q.msgs = append(q.msgs, sl.size)
			q.mtypes = append(q.mtypes, 1)
		}
	}
}

// MaxLen is the longest script Draw makes.
const MaxLen = 60

// raceSetup builds the shape of kernel-probe.md §4 B1-B4: a small queue,
// full, two or three tasks asleep as senders, then a receive that frees
// room for more than one of them.
func (s *Shadow) raceSetup(src Source) []ops.Op {
	out := []ops.Op{s.create(src)}
	q := s.queues[len(s.queues)-1]
	ref := ops.Ref{Handle: q.handle}
	unit := pick(src, []int64{10, 20, 25}, "unit")
	slots := int64(2 + src.Intn(3, "slots"))
	q.qbytes, q.mode = unit*slots, 0o600
	out = append(out, ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: q.qbytes, Mode: 0o600})
	for i := range slots {
		op := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1 + i%2, Size: unit,
			Fill: uint8(src.Intn(26, "fill")), MsgFlags: ops.MsgNowait}
		s.deliver(q, unit, op.Mtype)
		out = append(out, op)
	}
	senders := 2 + src.Intn(2, "senders")
	for t := 1; t <= senders; t++ {
		size := unit * int64(1+src.Intn(2, "sender size"))
		if src.Intn(3, "odd size") == 0 {
			size = unit/2 + int64(src.Intn(int(unit), "size"))
		}
		out = append(out, ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 3, Size: size,
			Fill: uint8(src.Intn(26, "fill")), Task: uint8(t)})
		s.asleep[t] = &sleeper{queue: q.handle, send: true, size: size}
	}
	recv := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: 200, MsgFlags: ops.MsgNowait}
	if src.Intn(2, "receive two") == 0 {
		recv.Mtype = -2 // the lowest type first
	}
	s.take(q, recv.Mtype)
	return append(out, recv)
}

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { return s.clone() }

func (s *Shadow) clone() *Shadow {
	c := &Shadow{nextHandle: s.nextHandle, swarm: s.swarm, pending: append([]ops.Op(nil), s.pending...)}
	for _, q := range s.queues {
		n := *q
		n.msgs = append([]int64(nil), q.msgs...)
		n.mtypes = append([]int64(nil), q.mtypes...)
		c.queues = append(c.queues, &n)
	}
	for t, sl := range s.asleep {
		if sl != nil {
			n := *sl
			c.asleep[t] = &n
		}
	}
	return c
}

// Subsystem is the msg subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "msg",
	Doc:        "message queues with tasks that block: msgsnd, msgrcv with every search mode and flag, msgctl, woken tasks that race",
	NewShadow:  func(src engine.Source, _ equiv.Relation) engine.Shadow { return NewShadow(src) },
	MinLen:     4,
	MaxLen:     MaxLen,
	FuzzMaxLen: 40,
	Relations:  []equiv.Relation{equiv.Exact},
}
