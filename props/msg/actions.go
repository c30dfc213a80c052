package msg

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// actions is the generator's table: each step draws one of those whose
// When holds, by weight (times the script's swarm).
var actions = engine.Actions[*Shadow]{
	{Name: "create", Weight: 1, When: func(s *Shadow) bool { return len(s.queues) < 3 }, Draw: func(s *Shadow, src Source) ops.Op { return s.create(src) }},
	{Name: "shrink", Weight: 1, Draw: (*Shadow).shrink},
	{Name: "fill", Weight: 2, Draw: (*Shadow).fill},
	{Name: "block send", Weight: 3, When: hasFree, Draw: (*Shadow).blockSend},
	{Name: "block receive", Weight: 2, When: hasFree, Draw: (*Shadow).blockRecv},
	{Name: "receive", Weight: 3, Draw: (*Shadow).recv},
	{Name: "copy", Weight: 1, Draw: (*Shadow).copyMsg},
	{Name: "stat", Weight: 1, Draw: (*Shadow).stat},
	{Name: "info", Weight: 1, Draw: func(s *Shadow, src Source) ops.Op {
		return ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: s.queue(src).handle}, MCmd: pick(src, []ops.MsgCmd{ops.MsgIPCInfo, ops.MsgInfoCmd}, "cmd")}
	}},
	{Name: "set", Weight: 1, When: hasSleepers, Draw: (*Shadow).set},
	{Name: "rmid", Weight: 1, When: func(s *Shadow) bool { return s.mayRmid }, Draw: (*Shadow).rmid},
	{Name: "list", Weight: 1, Draw: func(*Shadow, Source) ops.Op { return ops.Op{Kind: ops.KindList, Type: ops.Msg, Rows: true} }},
	{Name: "busy", Weight: 1, When: hasSleepers, Draw: (*Shadow).busy},
	{Name: "fork", Weight: 1, When: hasFree, Draw: func(s *Shadow, src Source) ops.Op {
		return s.Slots.Fork(src, engine.Pick(src, s.freeTasks(), "parent"))
	}},
	{Name: "bad", Weight: 1, Draw: (*Shadow).bad},
	{Name: "queue at msgmnb", Weight: 1, Draw: (*Shadow).atMsgmnb},
	{Name: "visit a namespace", Weight: 1, When: hasFree, Draw: (*Shadow).visit},
}

func hasFree(s *Shadow) bool     { return len(s.freeTasks()) > 0 }
func hasSleepers(s *Shadow) bool { return len(engine.FreeTasks(&s.asleep, s.Span)) < s.Span }

// shrink lowers a queue's qbytes (as root), which lets sleeping senders in
// if their message fits.
func (s *Shadow) shrink(src Source) ops.Op {
	q := s.queue(src)
	v := pick(src, []int64{16, 24, 30, 40, 60, 100}, "qbytes")
	op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, MCmd: ops.MsgIPCSet, Value: v, Mode: 0o600}
	q.qbytes, q.mode = v, 0o600
	s.wakeAll(q)
	return op
}

// fill sends a message by t0 with IPC_NOWAIT.
func (s *Shadow) fill(src Source) ops.Op {
	q := s.queue(src)
	size := pick(src, sizePool, "size")
	op := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, Mtype: pick(src, typePool, "mtype"), Size: size,
		Fill: uint8(src.Intn(26, "fill")), MsgFlags: ops.MsgNowait, As: caller(src)}
	if q.may(op.As, true) && q.fits(size) {
		s.deliver(q, size, op.Mtype)
	}
	return op
}

// blockSend sends a message by a free task, which sleeps if it does not fit.
func (s *Shadow) blockSend(src Source) ops.Op {
	q := s.queue(src)
	t := pick(src, s.freeTasks(), "task")
	size := pick(src, sizePool, "size")
	op := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, Mtype: pick(src, typePool, "mtype"), Size: size,
		Fill: uint8(src.Intn(26, "fill")), Task: t, As: caller(src)}
	if !q.mayBlock(t) {
		op.MsgFlags |= ops.MsgNowait // no more sleepers than the models follow
	}
	switch {
	case !q.may(op.As, true):
	case q.fits(size):
		s.deliver(q, size, op.Mtype)
	case op.MsgFlags&ops.MsgNowait == 0:
		s.asleep[t] = &sleeper{queue: q.handle, send: true, size: size}
	}
	return op
}

// blockRecv receives by a free task, which sleeps if nothing matches.
func (s *Shadow) blockRecv(src Source) ops.Op {
	q := s.queue(src)
	t := pick(src, s.freeTasks(), "task")
	op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, Size: pick(src, bufPool, "bufsize"),
		Mtype: pick(src, rtypePool, "msgtyp"), Task: t}
	if src.Intn(4, "noerror") == 0 {
		op.MsgFlags |= ops.MsgNoerror
	}
	if src.Intn(4, "except") == 0 {
		op.MsgFlags |= ops.MsgExcept // the kernel takes it with any msgtyp
	}
	op.As = caller(src)
	// A receiver whose buffer is bad still takes its message, then loses
	// it in the copy-out (EFAULT): the queue changes as for a good one.
	op.BadBuf = engine.OneIn(src, 4, "bad buffer")
	if !q.mayBlock(t) {
		op.MsgFlags |= ops.MsgNowait // no more sleepers than the models follow
	}
	if q.may(op.As, false) && !s.take(q, op.Mtype) && op.MsgFlags&ops.MsgNowait == 0 {
		s.asleep[t] = &sleeper{queue: q.handle, mtype: op.Mtype}
	}
	return op
}

// recv receives with IPC_NOWAIT, by t0 or (one time in four) a free task.
func (s *Shadow) recv(src Source) ops.Op {
	q := s.queue(src)
	op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, Size: pick(src, bufPool, "bufsize"),
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
}

// copyMsg is a MSG_COPY receive of a position in the queue.
func (s *Shadow) copyMsg(src Source) ops.Op {
	op := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{Handle: s.queue(src).handle}, Size: pick(src, bufPool, "bufsize"),
		Mtype: int64(src.Intn(4, "position")) - 1, MsgFlags: ops.MsgNowait | ops.MsgCopy}
	if src.Intn(4, "noerror") == 0 {
		op.MsgFlags |= ops.MsgNoerror
	}
	return op
}

// stat is IPC_STAT on a queue, or MSG_STAT(_ANY) on an index.
func (s *Shadow) stat(src Source) ops.Op {
	op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: s.queue(src).handle}, MCmd: ops.MsgIPCStat}
	if src.Intn(3, "by index") == 0 {
		op.MCmd = pick(src, []ops.MsgCmd{ops.MsgStat, ops.MsgStatAny}, "cmd")
		op.Obj = ops.Ref{ID: int64(src.Intn(4, "index"))}
	}
	if src.Intn(5, "unprivileged") == 0 {
		op.As = 1000
	}
	return op
}

// set is IPC_SET of qbytes, mode and group, which wakes sleepers to check
// again.
func (s *Shadow) set(src Source) ops.Op {
	q := s.queue(src)
	v := pick(src, qbytesPool, "qbytes")
	op := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, MCmd: ops.MsgIPCSet, Value: v, Mode: pick(src, modePool, "mode"), As: caller(src),
		Group: pick(src, groupPool, "gid")}
	if v <= ops.DefaultMsgmnb && (op.As == 0 || op.As == q.owner) {
		q.qbytes, q.mode = v, op.Mode
		q.group = q.group || op.Group == 1000
		s.wakeAll(q)
	}
	return op
}

func (s *Shadow) rmid(src Source) ops.Op {
	q := s.queue(src)
	op := ops.Op{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: q.handle}, As: caller(src)}
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
}

// busy is a call by a task that sleeps: EBUSY.
func (s *Shadow) busy(src Source) ops.Op {
	var busy []uint8
	for t := 1; t <= ops.MaxTask; t++ {
		if s.asleep[t] != nil {
			busy = append(busy, uint8(t))
		}
	}
	return ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: s.queue(src).handle}, MCmd: ops.MsgIPCStat, Task: pick(src, busy, "task")}
}

// bad draws deliberately bad arguments.
func (s *Shadow) bad(src Source) ops.Op {
	ref := ops.Ref{Handle: s.queue(src).handle}
	switch src.Intn(8, "bad") {
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
	case 5: // a command no kernel has: EINVAL, whatever the queue
		return ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgInvalid, As: caller(src)}
	case 6: // a bad buffer: EFAULT where the kernel copies, in its order
		return s.badBuf(src, ref)
	}
	return ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ops.Ref{ID: ops.MakeID(65535, 3)}, Mtype: 1, Size: 1, MsgFlags: ops.MsgNowait}
}

// badBuf draws a call whose buffer is unmapped, on the queue, a stale id
// or a negative one: the kernel's copy in or out decides the errno by
// where it comes among the checks.
func (s *Shadow) badBuf(src Source, ref ops.Ref) ops.Op {
	if src.Intn(3, "bad buffer id") == 0 {
		ref = ops.Ref{ID: pick(src, []int64{-1, ops.MakeID(7, 3)}, "id")}
	}
	op := ops.Op{Type: ops.Msg, Obj: ref, As: caller(src), BadBuf: true}
	switch src.Intn(4, "bad buffer call") {
	case 0:
		op.Kind, op.Mtype, op.Size, op.MsgFlags = ops.KindMsgsnd, pick(src, []int64{1, 0}, "mtype"), pick(src, sizePool, "size"), ops.MsgNowait
	case 1:
		op.Kind, op.Size, op.MsgFlags = ops.KindMsgrcv, pick(src, bufPool, "bufsize"), ops.MsgNowait
		if src.Intn(3, "copy") == 0 {
			op.MsgFlags |= ops.MsgCopy
		}
	case 2:
		op.Kind, op.MCmd = ops.KindMsgctl, pick(src, []ops.MsgCmd{ops.MsgIPCStat, ops.MsgStat, ops.MsgIPCInfo, ops.MsgInfoCmd}, "cmd")
	default:
		op.Kind, op.MCmd, op.Value, op.Mode = ops.KindMsgctl, ops.MsgIPCSet, 100, 0o600
	}
	return op
}
