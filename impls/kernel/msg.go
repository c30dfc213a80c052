//go:build linux && amd64

package kernel

import (
	"fmt"
	"slices"
	"syscall"
	"unsafe"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The msg subsystem (ipc/msg.c) on the real kernel. msgsnd and msgrcv by
// task t0 run on the worker thread and never block (the vocabulary gives
// them IPC_NOWAIT). By a task t1..t4 they are started in the task process
// without waiting, then settled: the call returned (its result), or the task
// sleeps in it (state S with wchan do_msgsnd or do_msgrcv, blocking.go), and
// the result is Blocked. A sleeping task keeps its call pending; after every
// operation every pending call is settled again, and those that returned are
// the operation's completions (Result.Done).

// Flags of msgsnd and msgrcv and commands of msgctl (<linux/msg.h>).
const (
	msgNoerror = 0o10000
	msgExcept  = 0o20000
	msgCopy    = 0o40000
	msgStatCmd = 11
	msgInfoCmd = 12
	msgStatAny = 13
)

// msgTextCap is the room for text in a 256-byte task buffer after the
// 8-byte mtype.
const msgTextCap = int64(unsafe.Sizeof(statBuf{})) - 8

var msgCmds = map[ops.MsgCmd]int{
	ops.MsgIPCStat: ipcStat, ops.MsgIPCSet: ipcSet, ops.MsgIPCInfo: ipcInfo,
	ops.MsgInfoCmd: msgInfoCmd, ops.MsgStat: msgStatCmd, ops.MsgStatAny: msgStatAny,
}

// pendingCall is a task's msgsnd or msgrcv that has not returned: the task
// sleeps in it, or was woken and has not been settled since.
type pendingCall struct {
	kind ops.Kind
	id   int64 // the queue id as the kernel read it (an int)
	req  taskReq
}

// msgFlags turns the vocabulary's flags into the kernel's.
func msgFlags(f uint8) uintptr {
	var k uintptr
	if f&ops.MsgNowait != 0 {
		k |= ipcNowait
	}
	if f&ops.MsgNoerror != 0 {
		k |= msgNoerror
	}
	if f&ops.MsgExcept != 0 {
		k |= msgExcept
	}
	if f&ops.MsgCopy != 0 {
		k |= msgCopy
	}
	return k
}

// busy reports whether task n sleeps in an earlier call.
func (t *thread) busy(n uint8) bool {
	return n != 0 && int(n) < len(t.tasks) && t.tasks[n] != nil && t.tasks[n].pending != nil
}

// doMsg runs a msg operation.
func (t *thread) doMsg(op ops.Op) (ops.Result, syscall.Errno, error) {
	switch op.Kind {
	case ops.KindMsgsnd:
		return t.msgsnd(op)
	case ops.KindMsgrcv:
		return t.msgrcv(op)
	case ops.KindMsgctl:
		return t.msgctl(op)
	}
	return ops.Result{}, 0, fmt.Errorf("not a msg operation")
}

func (t *thread) msgsnd(op ops.Op) (ops.Result, syscall.Errno, error) {
	// A size above msgmax is passed as it is: the kernel refuses it
	// (EINVAL) before it reads the text. Between the buffer and msgmax
	// the kernel would read past the buffer.
	if op.Size > msgTextCap && op.Size <= ops.DefaultMsgmax {
		return ops.Result{}, 0, fmt.Errorf("msgsnd size %d: the buffer holds %d bytes of text", op.Size, msgTextCap)
	}
	var buf statBuf
	b := (*[256]byte)(unsafe.Pointer(&buf))
	*(*int64)(unsafe.Pointer(&b[0])) = op.Mtype
	if op.Size > 0 && op.Size <= msgTextCap {
		copy(b[8:], ops.MsgText(op.Fill, op.Size))
	}
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), msgFlags(op.MsgFlags)}
	_, e, blocked, err := t.msgCall(op, syscall.SYS_MSGSND, args, &buf)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	return ops.Result{Blocked: blocked}, 0, nil
}

func (t *thread) msgrcv(op ops.Op) (ops.Result, syscall.Errno, error) {
	if op.Size > msgTextCap {
		return ops.Result{}, 0, fmt.Errorf("msgrcv size %d: the buffer holds %d bytes of text", op.Size, msgTextCap)
	}
	var buf statBuf
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), uintptr(op.Mtype), msgFlags(op.MsgFlags)}
	r, e, blocked, err := t.msgCall(op, syscall.SYS_MSGRCV, args, &buf)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	if blocked {
		return ops.Result{Blocked: true}, 0, nil
	}
	m, err := receivedMessage(r, &buf)
	return ops.Result{Msg: m}, 0, err
}

// receivedMessage reads what msgrcv returning n put in buf.
func receivedMessage(n uintptr, buf *statBuf) (ops.Message, error) {
	if int64(n) > msgTextCap {
		return ops.Message{}, fmt.Errorf("msgrcv returned %d bytes, more than the buffer holds", n)
	}
	b := (*[256]byte)(unsafe.Pointer(buf))
	return ops.Message{Type: *(*int64)(unsafe.Pointer(&b[0])), Text: string(b[8 : 8+n])}, nil
}

// msgCall runs msgsnd or msgrcv (nr) as op's task with buf as the message
// buffer (argument 1). By t0 it is a plain syscall. By another task it is
// started in the task process and settled: blocked is true when the task
// fell asleep in it, which leaves the call pending.
func (t *thread) msgCall(op ops.Op, nr uintptr, args [6]uintptr, buf *statBuf) (r uintptr, e syscall.Errno, blocked bool, err error) {
	if op.Task == 0 {
		flags := args[3] // msgsnd(id, buf, size, flags)
		if nr == syscall.SYS_MSGRCV {
			flags = args[4] // msgrcv(id, buf, size, type, flags)
		}
		if flags&ipcNowait == 0 {
			return 0, 0, false, fmt.Errorf("%s by t0 without nowait would block the worker thread", op.Kind)
		}
		args[1] = uintptr(unsafe.Pointer(buf))
		r, _, e = syscall.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		return r, e, false, nil
	}
	p, err := t.task(int(op.Task))
	if err != nil {
		return 0, 0, false, err
	}
	req := taskReq{Nr: uint64(nr), BufArg: 1, As: op.As, Buf: *(*[32]uint64)(unsafe.Pointer(buf))}
	for i, a := range args {
		req.Args[i] = uint64(a)
	}
	if err := p.start(&req); err != nil {
		return 0, 0, false, err
	}
	returned, err := p.settle()
	if err != nil {
		return 0, 0, false, err
	}
	if !returned {
		p.pending = &pendingCall{kind: op.Kind, id: int64(int32(op.Obj.ID)), req: req}
		return 0, 0, true, nil
	}
	resp, err := p.collect(&req)
	if err != nil {
		return 0, 0, false, err
	}
	*(*[32]uint64)(unsafe.Pointer(buf)) = resp.Buf
	return uintptr(resp.R), syscall.Errno(resp.Errno), false, nil
}

// settlePending settles every pending call until none returns any more: a
// woken sender that gets in may itself hand its message to a sleeping
// receiver, so a round with a return is followed by another. It returns
// the calls that returned, in task order. Only when a whole round finds
// every pending task asleep in its call is nothing left running.
func (t *thread) settlePending() ([]ops.Completion, error) {
	var done []ops.Completion
	for {
		progressed := false
		for n, p := range t.tasks {
			if p == nil || p.pending == nil {
				continue
			}
			returned, err := p.settle()
			if err != nil {
				return nil, fmt.Errorf("settling task t%d: %w", n, err)
			}
			if !returned {
				continue
			}
			c, err := p.complete(n)
			if err != nil {
				return nil, err
			}
			done = append(done, c)
			progressed = true
		}
		if !progressed {
			break
		}
	}
	ops.SortCompletions(done)
	return done, nil
}

// complete reads the response of task n's pending call, which has returned.
func (p *taskProc) complete(n int) (ops.Completion, error) {
	call := p.pending
	p.pending = nil
	resp, err := p.collect(&call.req)
	if err != nil {
		return ops.Completion{}, fmt.Errorf("task t%d: %w", n, err)
	}
	c := ops.Completion{Task: uint8(n), Err: ops.Errno(resp.Errno)}
	if call.kind == ops.KindMsgrcv && resp.Errno == 0 {
		if c.Msg, err = receivedMessage(uintptr(resp.R), (*statBuf)(unsafe.Pointer(&resp.Buf))); err != nil {
			return ops.Completion{}, fmt.Errorf("task t%d: %w", n, err)
		}
		c.Recv = true
	}
	return c, nil
}

// msqid64DS is struct msqid64_ds on x86-64 (120 bytes).
type msqid64DS struct {
	perm                ipc64Perm
	stime, rtime, ctime int64
	cbytes, qnum        uint64
	qbytes              uint64
	lspid, lrpid        int32
	_                   [2]uint64
}

// msgRow reads a msg row out of an IPC_STAT or MSG_STAT buffer.
func (t *thread) msgRow(ds *msqid64DS) ops.Row {
	return ops.Row{
		Key: ds.perm.key, Mode: uint16(ds.perm.mode), Size: int64(ds.cbytes), Qnum: int64(ds.qnum),
		Cpid: t.pid(int64(ds.lspid)), Lpid: t.pid(int64(ds.lrpid)),
		UID: ds.perm.uid, GID: ds.perm.gid, CUID: ds.perm.cuid, CGID: ds.perm.cgid,
		Atime: ds.stime != 0, Dtime: ds.rtime != 0, Ctime: ds.ctime != 0,
	}
}

func (t *thread) msgctl(op ops.Op) (ops.Result, syscall.Errno, error) {
	cmd, ok := msgCmds[op.MCmd]
	if !ok {
		return ops.Result{}, 0, fmt.Errorf("unknown msgctl command %d", op.MCmd)
	}
	var buf statBuf
	ds := (*msqid64DS)(unsafe.Pointer(&buf.ds))
	if op.MCmd == ops.MsgIPCSet {
		// IPC_SET takes uid, gid, mode and qbytes from the buffer; the
		// owner is kept. It is read with MSG_STAT_ANY (no permission
		// check, so it works for any caller) by the worker thread; if
		// the id names no queue, the kernel refuses the IPC_SET on its
		// own and the owner does not matter.
		var cur statBuf
		if r, _, e := syscall.Syscall(syscall.SYS_MSGCTL, uintptr(ops.IDIdx(op.Obj.ID)), msgStatAny, uintptr(unsafe.Pointer(&cur))); e == 0 && int64(int32(r)) == int64(int32(op.Obj.ID)) {
			c := (*msqid64DS)(unsafe.Pointer(&cur.ds))
			ds.perm.uid, ds.perm.gid = c.perm.uid, c.perm.gid
		}
		ds.perm.mode = uint32(op.Mode & 0o777)
		ds.qbytes = uint64(op.Value) // the kernel takes it as an int
	}
	r, e, err := t.sys(op, syscall.SYS_MSGCTL, [6]uintptr{uintptr(op.Obj.ID), uintptr(cmd)}, &buf, 2)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	var res ops.Result
	switch op.MCmd {
	case ops.MsgIPCStat, ops.MsgStat, ops.MsgStatAny:
		res.Row = t.msgRow(ds)
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
func (t *thread) queues(rows []ops.Row) ([]ops.QueueState, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]ops.QueueState, 0, len(rows))
	var cp msgCopyBuf
	for _, row := range rows {
		q := ops.QueueState{ID: row.ID}
		for i := 0; ; i++ {
			n, _, e := syscall.Syscall6(syscall.SYS_MSGRCV, uintptr(row.ID), uintptr(unsafe.Pointer(&cp)), uintptr(len(cp.text)), uintptr(i), msgCopy|ipcNowait, 0)
			if e == syscall.ENOMSG {
				break
			}
			if e != 0 {
				return nil, fmt.Errorf("msgrcv(%d, MSG_COPY, position %d): %w", row.ID, i, e)
			}
			q.Msgs = append(q.Msgs, ops.Message{Type: cp.mtype, Text: string(cp.text[:n])})
		}
		var buf statBuf
		if e := ipcCtl(ops.Msg, row.ID, ipcStat, &buf); e != 0 {
			return nil, fmt.Errorf("msgctl(%d, IPC_STAT): %w", row.ID, e)
		}
		q.Qbytes = int64((*msqid64DS)(unsafe.Pointer(&buf.ds)).qbytes)
		for n, p := range t.tasks {
			if p == nil || p.pending == nil || p.pending.id != row.ID {
				continue
			}
			if p.pending.kind == ops.KindMsgsnd {
				q.Senders = append(q.Senders, uint8(n))
			} else {
				q.Receivers = append(q.Receivers, uint8(n))
			}
		}
		slices.Sort(q.Senders)
		slices.Sort(q.Receivers)
		out = append(out, q)
	}
	return out, nil
}
