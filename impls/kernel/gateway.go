//go:build linux && amd64

package kernel

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// caller is who issues a syscall: task 0 (the worker thread itself, whose
// credentials applyAs has already switched) or a task process, as uid as
// (0: the task's own).
type caller struct {
	task uint8
	as   uint32
}

// callerOf is the caller of op.
func callerOf(op ops.Op) caller { return caller{task: op.Task, as: op.As} }

// sys runs syscall nr as c. buf, if not nil, is passed as argument bufArg
// (and comes back as the call left it). A task is started on first use.
func (ts *tasks) sys(c caller, nr uintptr, args [6]uintptr, buf []byte, bufArg int) (uintptr, unix.Errno, error) {
	if c.task == 0 {
		if buf != nil {
			args[bufArg] = uintptr(unsafe.Pointer(&buf[0]))
		}
		clock := ts.pool.Time()
		start := clock.Begin()
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		clock.End(start)
		runtime.KeepAlive(buf)
		return r, e, nil
	}
	p, err := ts.get(int(c.task))
	if err != nil {
		return 0, 0, err
	}
	req := task.Req{Kind: task.KindCall, Nr: uint64(nr), As: c.as}
	for i, a := range args {
		req.Args[i] = uint64(a)
	}
	if buf != nil {
		req.PtrArgs = 1 << bufArg
		req.Args[bufArg] = 0
	}
	resp, err := p.Call(&req, buf)
	if err != nil {
		return 0, 0, err
	}
	return uintptr(resp.R), unix.Errno(resp.Errno), nil
}

// withBadBuf returns buf and args for op's buffer argument i: unchanged,
// or, where op's buffer is bad, no buffer and ops.BadAddress in args[i].
func withBadBuf(op ops.Op, buf []byte, args [6]uintptr, i int) ([]byte, [6]uintptr) {
	if !op.BadBuf {
		return buf, args
	}
	args[i] = ops.BadAddress
	return nil, args
}

// badArg makes argument i of q the bad address instead of an offset into
// its buffer.
func (q *blockingReq) badArg(i int) {
	q.args[i] = ops.BadAddress
	q.ptrs &^= 1 << i
}

// blockingReq is a call that may sleep: msgsnd, msgrcv or semop.
type blockingReq struct {
	caller caller
	// kind and id are what the call is and the object it is on (as the
	// kernel reads the id: an int), for a pending call.
	kind ops.Kind
	id   int64
	nr   uintptr
	// args are the arguments; each one whose bit is set in ptrs is an
	// offset into buf.
	args [6]uintptr
	buf  []byte
	ptrs uint32
	// nowait says the call cannot sleep; timed that it has a timeout, so
	// that it returns on its own (the vocabulary's only timeout that does
	// not fail at once is zero, and a semtimedop with a zero timeout does
	// sleep, up to the task's timer slack, 50 µs: its sleep is no evidence
	// of blocking).
	nowait, timed bool
}

// blockingCall runs q. By t0 it is a plain syscall, run with every signal
// blocked, which must not sleep for long (nowait or timed: the vocabulary
// makes sure). By another task it is started in the task process and
// settled: blocked is true when the task fell asleep in it, which leaves
// the call pending.
func (ts *tasks) blockingCall(q blockingReq) (r uintptr, e unix.Errno, blocked bool, err error) {
	if q.caller.task == 0 {
		if !q.nowait && !q.timed {
			return 0, 0, false, fmt.Errorf("%s by t0 without nowait would block the worker thread", q.kind)
		}
		r, e = callBlockingSignals(q.nr, q.args, q.buf, q.ptrs, ts.pool.Time())
		return r, e, false, nil
	}
	n := int(q.caller.task)
	p, err := ts.get(n)
	if err != nil {
		return 0, 0, false, err
	}
	req := task.Req{Kind: task.KindCall, Flags: task.Interruptible, Nr: uint64(q.nr), As: q.caller.as, PtrArgs: q.ptrs}
	for i, a := range q.args {
		req.Args[i] = uint64(a)
	}
	if err := p.Start(&req, q.buf); err != nil {
		return 0, 0, false, err
	}
	returned, err := settleStarted(n, p, q.timed)
	if err != nil {
		return 0, 0, false, err
	}
	if !returned {
		ts.pending[n] = &pendingCall{kind: q.kind, id: q.id, buf: q.buf}
		return 0, 0, true, nil
	}
	resp, err := p.Collect(q.buf)
	if err != nil {
		return 0, 0, false, err
	}
	return uintptr(resp.R), unix.Errno(resp.Errno), false, nil
}

// settleStarted waits until the call task n started has returned (true)
// or the task sleeps in it (false); a timed call is waited for until it
// returns.
func settleStarted(n int, p *task.Proc, timed bool) (bool, error) {
	if !timed {
		return p.Settle()
	}
	returned, err := p.ReadyWithin(task.SettleTimeout())
	if err == nil && !returned {
		err = fmt.Errorf("task t%d (pid %d): a call with a timeout did not return within %v", n, p.Pid(), task.SettleTimeout())
	}
	return returned, err
}

// callBlockingSignals runs a syscall on the worker thread, each argument
// whose bit is set in ptrs being an offset into buf, with every signal
// blocked, so that the runtime's signals cannot interrupt it; the call
// alone is timed by clock (nil for none).
func callBlockingSignals(nr uintptr, args [6]uintptr, buf []byte, ptrs uint32, clock *task.Timing) (uintptr, unix.Errno) {
	for i := range args {
		if ptrs&(1<<i) != 0 {
			args[i] = uintptr(unsafe.Pointer(&buf[args[i]]))
		}
	}
	all, old := ^uint64(0), uint64(0)
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return 0, e
	}
	start := clock.Begin()
	r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	clock.End(start)
	runtime.KeepAlive(buf)
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	return r, e
}
