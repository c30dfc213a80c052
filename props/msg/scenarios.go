package msg

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

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

// atMsgmnb begins the scenario of a queue at exactly msgmnb: a fresh queue,
// IPC_SET of qbytes to msgmnb by its owner (allowed without
// CAP_SYS_RESOURCE; one byte more, drawn one time in four, is EPERM), two
// messages of msgmax bytes that fill it to the byte, then a send that
// still fits (0 bytes: msg_fits_inqueue takes cbytes + size <= qbytes) or
// one that does not by one byte (with IPC_NOWAIT EAGAIN, by a task asleep),
// and an IPC_STAT.
func (s *Shadow) atMsgmnb(src Source) ops.Op {
	create := s.create(src)
	q := s.queues[len(s.queues)-1]
	ref := ops.Ref{Handle: q.handle}
	qbytes := int64(ops.DefaultMsgmnb)
	if src.Intn(4, "one byte more") == 0 {
		qbytes++
	}
	full := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, Size: ops.DefaultMsgmax, MsgFlags: ops.MsgNowait}
	last := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 2, Size: 1, MsgFlags: ops.MsgNowait}
	s.Plan.Add(ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCSet, Value: qbytes, Mode: 0o600, As: q.owner}, full, full)
	q.qbytes, q.mode = ops.DefaultMsgmnb, 0o600
	q.msgs, q.mtypes = []int64{ops.DefaultMsgmax, ops.DefaultMsgmax}, []int64{1, 1}
	switch free := s.freeTasks(); {
	case src.Intn(3, "fits") == 0:
		last.Size = 0
		q.msgs, q.mtypes = append(q.msgs, 0), append(q.mtypes, 2)
	case len(free) > 0 && src.Intn(2, "asleep") == 0:
		last.MsgFlags, last.Task = 0, pick(src, free, "task")
		s.asleep[last.Task] = &sleeper{queue: q.handle, send: true, size: 1}
	}
	s.Plan.Add(last, ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCStat})
	return create
}
