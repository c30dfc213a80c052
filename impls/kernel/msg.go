//go:build linux && amd64

package kernel

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

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
}

// pendingCall is a task's call that has not returned (msgsnd, msgrcv or
// semop): the task sleeps in it, or was woken and has not been settled
// since.
type pendingCall struct {
	kind ops.Kind
	id   int64  // the object id as the kernel read it (an int)
	buf  []byte // the payload the call was started with; its answer comes back into it
}

// msgFlags turns the vocabulary's flags into the kernel's.
func msgFlags(f uint8) uintptr {
	var k uintptr
	if f&ops.MsgNowait != 0 {
		k |= unix.IPC_NOWAIT
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
func (t *thread) doMsg(op ops.Op) (ops.Result, unix.Errno, error) {
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

// msgBuf is a struct msgbuf with room for size bytes of text: an mtype,
// then the text. A size outside 0..msgmax gets no room: the kernel refuses
// it before it reads any text.
func msgBuf(size int64) []byte {
	if size < 0 || size > ops.DefaultMsgmax {
		size = 0
	}
	return make([]byte, 8+size)
}

func (t *thread) msgsnd(op ops.Op) (ops.Result, unix.Errno, error) {
	buf := msgBuf(op.Size)
	binary.NativeEndian.PutUint64(buf, uint64(op.Mtype))
	copy(buf[8:], ops.MsgText(op.Fill, int64(len(buf)-8)))
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), msgFlags(op.MsgFlags)}
	_, e, blocked, err := t.blockingCall(op, unix.SYS_MSGSND, args, buf, 1<<1, args[3]&unix.IPC_NOWAIT != 0, false)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	return ops.Result{Blocked: blocked}, 0, nil
}

func (t *thread) msgrcv(op ops.Op) (ops.Result, unix.Errno, error) {
	buf := msgBuf(op.Size)
	args := [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(op.Size), uintptr(op.Mtype), msgFlags(op.MsgFlags)}
	r, e, blocked, err := t.blockingCall(op, unix.SYS_MSGRCV, args, buf, 1<<1, args[4]&unix.IPC_NOWAIT != 0, false)
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

// blockingCall runs a call that may sleep (msgsnd, msgrcv, semop) as op's
// task; each argument i whose bit is set in ptrs is an offset into buf.
// nowait says the call cannot sleep; timed that it has a timeout, so that
// it returns on its own (the vocabulary's only timeout that does not fail
// at once is zero, and a semtimedop with a zero timeout does sleep, up to
// the task's timer slack, 50 µs: its sleep is no evidence of blocking).
// By t0 it is a plain syscall, run with every signal blocked, which must
// not sleep for long (nowait or timed: the vocabulary makes sure). By
// another task it is started in the task process and settled: blocked is
// true when the task fell asleep in it, which leaves the call pending.
func (t *thread) blockingCall(op ops.Op, nr uintptr, args [6]uintptr, buf []byte, ptrs uint32, nowait, timed bool) (r uintptr, e unix.Errno, blocked bool, err error) {
	if op.Task == 0 {
		if !nowait && !timed {
			return 0, 0, false, fmt.Errorf("%s by t0 without nowait would block the worker thread", op.Kind)
		}
		r, e = callBlockingSignals(nr, args, buf, ptrs)
		return r, e, false, nil
	}
	p, err := t.task(int(op.Task))
	if err != nil {
		return 0, 0, false, err
	}
	req := taskReq{Kind: taskCall, Flags: taskInterruptible, Nr: uint64(nr), As: op.As, PtrArgs: ptrs}
	for i, a := range args {
		req.Args[i] = uint64(a)
	}
	if err := p.start(&req, buf); err != nil {
		return 0, 0, false, err
	}
	var returned bool
	if timed {
		returned, err = p.readyWithin(settleTimeout)
		if err == nil && !returned {
			err = fmt.Errorf("task t%d (pid %d): a call with a timeout did not return within %v", p.n, p.pid, settleTimeout)
		}
	} else {
		returned, err = p.settle()
	}
	if err != nil {
		return 0, 0, false, err
	}
	if !returned {
		p.pending = &pendingCall{kind: op.Kind, id: int64(int32(op.Obj.ID)), buf: buf}
		return 0, 0, true, nil
	}
	resp, err := p.collect(buf)
	if err != nil {
		return 0, 0, false, err
	}
	return uintptr(resp.R), unix.Errno(resp.Errno), false, nil
}

// callBlockingSignals runs a syscall on the worker thread, each argument
// whose bit is set in ptrs being an offset into buf, with every signal
// blocked, so that the runtime's signals cannot interrupt it.
func callBlockingSignals(nr uintptr, args [6]uintptr, buf []byte, ptrs uint32) (uintptr, unix.Errno) {
	for i := range args {
		if ptrs&(1<<i) != 0 {
			args[i] = uintptr(unsafe.Pointer(&buf[args[i]]))
		}
	}
	all, old := ^uint64(0), uint64(0)
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return 0, e
	}
	r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	runtime.KeepAlive(buf)
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	return r, e
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
	resp, err := p.collect(call.buf)
	if err != nil {
		return ops.Completion{}, err
	}
	c := ops.Completion{Task: uint8(n), Err: ops.Errno(resp.Errno)}
	if call.kind == ops.KindMsgrcv && resp.Errno == 0 {
		if c.Msg, err = receivedMessage(uintptr(resp.R), call.buf); err != nil {
			return ops.Completion{}, fmt.Errorf("task t%d: %w", n, err)
		}
		c.Recv = true
	}
	return c, nil
}

// msqid64DS is struct msqid64_ds on x86-64 (120 bytes).
type msqid64DS struct {
	perm                unix.SysvIpcPerm
	stime, rtime, ctime int64
	cbytes, qnum        uint64
	qbytes              uint64
	lspid, lrpid        int32
	_                   [2]uint64
}

// msgRow reads a msg row out of an IPC_STAT or MSG_STAT buffer.
func (t *thread) msgRow(ds *msqid64DS) ops.Row {
	return ops.Row{
		Key: ds.perm.Key, Mode: uint16(ds.perm.Mode), Size: int64(ds.cbytes), Qnum: int64(ds.qnum),
		Cpid: t.pid(int64(ds.lspid)), Lpid: t.pid(int64(ds.lrpid)),
		UID: ds.perm.Uid, GID: ds.perm.Gid, CUID: ds.perm.Cuid, CGID: ds.perm.Cgid,
		Atime: ds.stime != 0, Dtime: ds.rtime != 0, Ctime: ds.ctime != 0,
	}
}

func (t *thread) msgctl(op ops.Op) (ops.Result, unix.Errno, error) {
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
		if r, _, e := unix.Syscall(unix.SYS_MSGCTL, uintptr(ops.IDIdx(op.Obj.ID)), msgStatAny, uintptr(unsafe.Pointer(&cur))); e == 0 && int64(int32(r)) == int64(int32(op.Obj.ID)) {
			c := (*msqid64DS)(unsafe.Pointer(&cur.ds))
			ds.perm.Uid, ds.perm.Gid = c.perm.Uid, c.perm.Gid
		}
		ds.perm.Gid = op.GroupOr(ds.perm.Gid)
		ds.perm.Mode = uint32(op.Mode & 0o777)
		ds.qbytes = uint64(op.Value) // the kernel takes it as an int
	}
	r, e, err := t.sys(op, unix.SYS_MSGCTL, [6]uintptr{uintptr(op.Obj.ID), uintptr(cmd)}, buf.bytes(), 2)
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
			n, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(row.ID), uintptr(unsafe.Pointer(&cp)), uintptr(len(cp.text)), uintptr(i), msgCopy|unix.IPC_NOWAIT, 0)
			if e == unix.ENOMSG {
				break
			}
			if e != 0 {
				return nil, fmt.Errorf("msgrcv(%d, MSG_COPY, position %d): %w", row.ID, i, e)
			}
			q.Msgs = append(q.Msgs, ops.Message{Type: cp.mtype, Text: string(cp.text[:n])})
		}
		var buf statBuf
		if e := ipcCtl(ops.Msg, row.ID, unix.IPC_STAT, &buf); e != 0 {
			return nil, fmt.Errorf("msgctl(%d, IPC_STAT): %w", row.ID, e)
		}
		q.Qbytes = int64((*msqid64DS)(unsafe.Pointer(&buf.ds)).qbytes)
		for n, p := range t.tasks {
			if p == nil || p.pending == nil || p.pending.id != row.ID || p.pending.kind == ops.KindSemop {
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
