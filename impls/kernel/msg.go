//go:build linux && amd64

package kernel

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The msg subsystem (ipc/msg.c) on the real kernel. msgsnd and msgrcv by
// task t0 run on the worker thread and never block (the vocabulary gives
// them IPC_NOWAIT). By a task t1..t15 they are started in the task process
// without waiting, then settled: the call returned (its result), or the task
// sleeps in it (state S inside msgsnd or msgrcv by /proc/<pid>/syscall,
// package task), and
// the result is Blocked. A sleeping task keeps its call pending; after every
// operation every pending call is settled again, and those that returned are
// the operation's completions (Result.Done).

// Flags of msgsnd and msgrcv and commands of msgctl (<linux/msg.h>);
// x/sys/unix has none of them.
const (
	msgNoerror = 0o10000
	msgExcept  = 0o20000
	msgCopy    = 0o40000
	msgStatCmd = 11
	msgInfoCmd = 12
	msgStatAny = 13
)

var msgCmds = map[ops.MsgCmd]int{
	ops.MsgIPCStat: unix.IPC_STAT, ops.MsgIPCSet: unix.IPC_SET, ops.MsgIPCInfo: ipcInfo,
	ops.MsgInfoCmd: msgInfoCmd, ops.MsgStat: msgStatCmd, ops.MsgStatAny: msgStatAny,
	ops.MsgInvalid: -1,
}

// msgFlagBits pairs each of the vocabulary's msg flags with the kernel's.
var msgFlagBits = [...]struct {
	op uint8
	k  uintptr
}{
	{ops.MsgNowait, unix.IPC_NOWAIT}, {ops.MsgNoerror, msgNoerror}, {ops.MsgExcept, msgExcept}, {ops.MsgCopy, msgCopy},
}

// msgFlags turns the vocabulary's flags into the kernel's.
func msgFlags(f uint8) uintptr {
	var k uintptr
	for _, b := range msgFlagBits {
		if f&b.op != 0 {
			k |= b.k
		}
	}
	return k
}

func init() {
	calls.Add((*ns).msgsnd, ops.KindMsgsnd)
	calls.Add((*ns).msgrcv, ops.KindMsgrcv)
	calls.Add((*ns).msgctl, ops.KindMsgctl)
}

// msgBuf is a struct msgbuf with room for size bytes of text: an mtype,
// then the text. A size outside 0..msgmax gets no room: the kernel refuses
// it before it reads any text.
func msgBuf(size int64) []byte {
	if size < 0 || size > ops.DefaultMsgmax {
		size = 0
	}
	return make([]byte, 8+size)
}

// msgRequest is the blocking call of a msgsnd or msgrcv op: the message
// buffer is argument 1.
func msgRequest(op ops.Op, nr uintptr, args [6]uintptr, buf []byte, flags uintptr) blockingReq {
	q := blockingReq{
		caller: callerOf(op), kind: op.Kind, id: int64(int32(op.Obj.ID)),
		nr: nr, args: args, buf: buf, ptrs: 1 << 1, nowait: flags&unix.IPC_NOWAIT != 0,
	}
	if op.BadBuf {
		q.badArg(1)
	}
	return q
}

func (n *ns) msgsnd(op ops.Op) (ops.Result, unix.Errno, error) {
	buf := msgBuf(op.Size)
	binary.NativeEndian.PutUint64(buf, uint64(op.Mtype))
	copy(buf[8:], ops.MsgText(op.Fill, int64(len(buf)-8)))
	flags := msgFlags(op.MsgFlags)
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), flags}
	_, e, blocked, err := n.tasks.blockingCall(msgRequest(op, unix.SYS_MSGSND, args, buf, flags))
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	return ops.Result{Blocked: blocked}, 0, nil
}

func (n *ns) msgrcv(op ops.Op) (ops.Result, unix.Errno, error) {
	buf := msgBuf(op.Size)
	flags := msgFlags(op.MsgFlags)
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), uintptr(op.Mtype), flags}
	r, e, blocked, err := n.tasks.blockingCall(msgRequest(op, unix.SYS_MSGRCV, args, buf, flags))
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	if blocked {
		return ops.Result{Blocked: true}, 0, nil
	}
	m, err := receivedMessage(r, buf)
	return ops.Result{Msg: m}, 0, err
}

// receivedMessage reads what msgrcv returning n put in buf.
func receivedMessage(n uintptr, buf []byte) (ops.Message, error) {
	if int64(n) > int64(len(buf)-8) {
		return ops.Message{}, fmt.Errorf("msgrcv returned %d bytes, more than the buffer holds", n)
	}
	return ops.Message{Type: int64(binary.NativeEndian.Uint64(buf)), Text: string(buf[8 : 8+n])}, nil
}

// msgRow reads a msg row out of an IPC_STAT or MSG_STAT buffer.
func (n *ns) msgRow(ds *msqid64DS) ops.Row {
	return ops.Row{
		Key: ds.perm.Key, Mode: uint16(ds.perm.Mode), Size: int64(ds.cbytes), Qnum: int64(ds.qnum),
		Cpid: n.tasks.pid(int64(ds.lspid)), Lpid: n.tasks.pid(int64(ds.lrpid)),
		UID: ds.perm.Uid, GID: ds.perm.Gid, CUID: ds.perm.Cuid, CGID: ds.perm.Cgid,
		Atime: ds.stime != 0, Dtime: ds.rtime != 0, Ctime: ds.ctime != 0,
	}
}

func (n *ns) msgctl(op ops.Op) (ops.Result, unix.Errno, error) {
	cmd, ok := msgCmds[op.MCmd]
	if !ok {
		return ops.Result{}, 0, fmt.Errorf("unknown msgctl command %d", op.MCmd)
	}
	var buf statBuf
	ds := (*msqid64DS)(unsafe.Pointer(&buf.ds))
	if op.MCmd == ops.MsgIPCSet {
		// IPC_SET takes uid, gid, mode and qbytes from the buffer; the
		// owner is kept, and the group too unless the op gives one. They
		// are read with MSG_STAT_ANY (no permission check, so it works
		// for any caller) by the worker thread; if the id names no queue,
		// the kernel refuses the IPC_SET on its own and the owner does
		// not matter.
		var cur statBuf
		r, e, err := n.peek(op.Task, unix.SYS_MSGCTL, [6]uintptr{uintptr(ops.IDIdx(op.Obj.ID)), msgStatAny}, cur.bytes(), 2)
		if err != nil {
			return ops.Result{}, 0, err
		}
		if e == 0 && int64(int32(r)) == int64(int32(op.Obj.ID)) {
			c := (*msqid64DS)(unsafe.Pointer(&cur.ds))
			ds.perm.Uid, ds.perm.Gid = c.perm.Uid, c.perm.Gid
		}
		ds.perm.Gid = op.GroupOr(ds.perm.Gid)
		ds.perm.Mode = uint32(op.Mode & 0o777)
		ds.qbytes = uint64(op.Value) // the kernel takes it as an int
	}
	b, args := withBadBuf(op, buf.bytes(), [6]uintptr{uintptr(op.Obj.ID), uintptr(cmd)}, 2)
	r, e, err := n.tasks.sys(callerOf(op), unix.SYS_MSGCTL, args, b, 2)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	var res ops.Result
	switch op.MCmd {
	case ops.MsgIPCStat, ops.MsgStat, ops.MsgStatAny:
		res.Row = n.msgRow(ds)
		res.Qbytes = int64(ds.qbytes)
		if op.MCmd != ops.MsgIPCStat {
			res.ID, res.Row.ID = int64(r), int64(r)
		}
	case ops.MsgIPCInfo, ops.MsgInfoCmd:
		// struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni,
		// msgssz, msgtql (int), msgseg (unsigned short).
		v := (*[7]int32)(unsafe.Pointer(&buf.ds))
		seg := *(*uint16)(unsafe.Add(unsafe.Pointer(&buf.ds), 28))
		res.ID = int64(r)
		res.MsgInfo = ops.MsgInfo{
			Msgpool: int64(v[0]), Msgmap: int64(v[1]), Msgmax: int64(v[2]), Msgmnb: int64(v[3]),
			Msgmni: int64(v[4]), Msgssz: int64(v[5]), Msgtql: int64(v[6]), Msgseg: int64(seg),
		}
	}
	return res, 0, nil
}

// msgCopyBuf is the buffer Snapshot reads queued messages into: room for
// any message up to msgmax.
type msgCopyBuf struct {
	mtype int64
	text  [ops.DefaultMsgmax]byte
}

// queues reads every queue of rows (the msg rows of a listing, in idx
// order): its messages in order, read with MSG_COPY so that nothing
// changes, its qbytes, and the tasks asleep on it.
func (r reader) queues(rows []ops.Row) ([]ops.QueueState, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]ops.QueueState, 0, len(rows))
	var cp msgCopyBuf
	for _, row := range rows {
		q := ops.QueueState{ID: row.ID}
		for i := 0; ; i++ {
			got, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(row.ID), uintptr(unsafe.Pointer(&cp)), uintptr(len(cp.text)), uintptr(i), msgCopy|unix.IPC_NOWAIT, 0)
			if e == unix.ENOMSG {
				break
			}
			if e != 0 {
				return nil, fmt.Errorf("msgrcv(%d, MSG_COPY, position %d): %w", row.ID, i, e)
			}
			q.Msgs = append(q.Msgs, ops.Message{Type: cp.mtype, Text: string(cp.text[:got])})
		}
		var buf statBuf
		if e := ipcCtl(ops.Msg, row.ID, unix.IPC_STAT, &buf); e != 0 {
			return nil, fmt.Errorf("msgctl(%d, IPC_STAT): %w", row.ID, e)
		}
		q.Qbytes = int64((*msqid64DS)(unsafe.Pointer(&buf.ds)).qbytes)
		for t, call := range r.tasks.pending {
			if call == nil || call.id != row.ID || call.kind == ops.KindSemop || !r.holds(t) {
				continue
			}
			if call.kind == ops.KindMsgsnd {
				q.Senders = append(q.Senders, uint8(t))
			} else {
				q.Receivers = append(q.Receivers, uint8(t))
			}
		}
		slices.Sort(q.Senders)
		slices.Sort(q.Receivers)
		out = append(out, q)
	}
	return out, nil
}
