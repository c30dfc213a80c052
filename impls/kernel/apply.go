//go:build linux && amd64

package kernel

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// applyChecked is apply; after an adapter error, which may leave a task
// half-way through a call, every task process is killed (new ones take
// their places at their next use).
func (n *ns) applyChecked(op ops.Op) (ops.Result, error) {
	r, err := n.apply(op)
	if err != nil {
		n.tasks.killAll()
	}
	return r, err
}

// apply runs op on the thread, as op.As when it is not 0, unless op's task
// sleeps in an earlier call (EBUSY, and no syscall; an interrupt is sent
// to the task, not issued by it). Then it settles every pending call:
// those that returned are the result's completions.
func (n *ns) apply(op ops.Op) (ops.Result, error) {
	n.dirty = true
	var r ops.Result
	if op.Kind != ops.KindInterrupt && n.tasks.busy(op.Task) {
		r.Err = ops.EBUSY
	} else {
		if op.Task > 0 && op.Kind != ops.KindInterrupt && op.Kind != ops.KindExit {
			defer func(t uint8) { n.tasks.used[t] = true }(op.Task)
		}
		var err error
		if r, err = n.applyAs(op); err != nil {
			return r, err
		}
	}
	done, err := n.tasks.settlePending()
	if err != nil {
		return r, fmt.Errorf("kernel: after %s: %w", ops.FormatOp(op), err)
	}
	r.Done = done
	return r, nil
}

// applyAs runs op on the thread, as op.As when it is not 0. A thread that
// cannot switch back is discarded (package worker).
func (n *ns) applyAs(op ops.Op) (ops.Result, error) {
	if op.As == 0 || op.Task != 0 {
		return n.do(op) // another task switches its own credentials
	}
	var r ops.Result
	var err error
	ran, werr := n.w.AsUser(op.As, func() { r, err = n.do(op) })
	switch {
	case werr != nil && !ran:
		return ops.Result{}, fmt.Errorf("kernel: %w", werr)
	case werr != nil:
		return r, fmt.Errorf("kernel: after running %s: %w", ops.FormatOp(op), werr)
	}
	return r, err
}

// do runs op with the thread's current credentials.
func (n *ns) do(op ops.Op) (ops.Result, error) {
	r, e, err := n.dispatch(op)
	if err != nil {
		return ops.Result{}, fmt.Errorf("kernel: %s: %w", ops.FormatOp(op), err)
	}
	if e != 0 {
		return ops.Result{Err: ops.Errno(e)}, nil
	}
	return r, nil
}

// dispatch runs op by its kind.
func (n *ns) dispatch(op ops.Op) (r ops.Result, e unix.Errno, err error) {
	switch op.Kind {
	case ops.KindGet:
		r.ID, e, err = n.get(op)
	case ops.KindRmid:
		e, err = n.ctl(op, unix.IPC_RMID, nil)
	case ops.KindStat:
		r.Obj, e, err = n.statObject(op)
	case ops.KindChurn:
		r.ID, e, err = churn(op)
	case ops.KindFill:
		r.ID, e = fill(op)
	case ops.KindShmat, ops.KindShmdt, ops.KindShmctl, ops.KindRmidForced, ops.KindShmRead, ops.KindShmWrite:
		r, e, err = n.doShm(op)
	case ops.KindExit:
		err = n.exitTask(int(op.Task))
	case ops.KindForkTask:
		e, err = n.forkTask(op)
	case ops.KindUnshare:
		err = n.unshare(op)
	case ops.KindSetns:
		err = n.setns(op)
	case ops.KindInterrupt:
		err = n.tasks.interrupt(int(op.Task))
	case ops.KindSemop, ops.KindSemctl, ops.KindSemLimits:
		r, e, err = n.doSem(op)
	case ops.KindMsgsnd, ops.KindMsgrcv, ops.KindMsgctl:
		r, e, err = n.doMsg(op)
	case ops.KindNextID:
		n.nextIDWritten[op.Type] = true
		e, err = setNextID(op.Type, op.Value)
	case ops.KindReadNextID:
		r.ID, err = n.proc.readInt("/proc/sys/kernel/" + op.Type.String() + "_next_id")
	case ops.KindLimit:
		e, err = n.proc.setLimit(op.Type, op.Value)
	case ops.KindList:
		r, e, err = n.list(op)
	default:
		err = fmt.Errorf("no IPC operation of kind %d", op.Kind)
	}
	return r, e, err
}

// list is a list op: the listing's rows, or its ids and keys.
func (n *ns) list(op ops.Op) (ops.Result, unix.Errno, error) {
	var r ops.Result
	rows, e, err := n.listing(op.Type)
	if e != 0 || err != nil {
		return r, e, err
	}
	if op.Rows {
		r.Rows = append(make([]ops.Row, 0, len(rows)), rows...)
		return r, 0, nil
	}
	r.List = make([]ops.Entry, len(rows))
	for i, o := range rows {
		r.List[i] = ops.Entry{ID: o.ID, Key: o.Key}
	}
	return r, 0, nil
}

// exitTask ends task n's process the way a process exits (package task)
// and forgets what it had attached.
func (n *ns) exitTask(t int) error {
	err := n.tasks.exit(t)
	if t > 0 && t < ops.NumTasks {
		n.forgetTask(t)
	}
	return err
}
