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

// dispatch runs op by its kind (calls).
func (n *ns) dispatch(op ops.Op) (ops.Result, unix.Errno, error) {
	c, ok := calls.Of(op.Kind)
	if !ok {
		return ops.Result{}, 0, calls.Unhandled(op.Kind)
	}
	return c(n, op)
}

// call runs one operation of its kind with the thread's credentials: its
// result, or the errno of the call that failed, or an error of the adapter.
type call func(n *ns, op ops.Op) (ops.Result, unix.Errno, error)

// calls is the adapter's table of kinds: each file adds those it
// implements, from init (ops.Handlers).
var calls = ops.NewHandlers[call]("the kernel adapter")

// Handles reports whether the adapter runs operations of kind k (the test
// of the built-ins' parts asks it of every kind their subsystems have).
func Handles(k ops.Kind) bool { return calls.Handles(k) }

// errnoCall adapts a call whose result is its errno alone; errCall one
// that only fails.
func errnoCall(f func(*ns, ops.Op) (unix.Errno, error)) call {
	return func(n *ns, op ops.Op) (ops.Result, unix.Errno, error) {
		e, err := f(n, op)
		return ops.Result{}, e, err
	}
}

func errCall(f func(*ns, ops.Op) error) call {
	return func(n *ns, op ops.Op) (ops.Result, unix.Errno, error) { return ops.Result{}, 0, f(n, op) }
}

// idCall adapts a call whose result is an id.
func idCall(f func(*ns, ops.Op) (int64, unix.Errno, error)) call {
	return func(n *ns, op ops.Op) (ops.Result, unix.Errno, error) {
		id, e, err := f(n, op)
		return ops.Result{ID: id}, e, err
	}
}

func init() {
	calls.Add(errCall(func(n *ns, op ops.Op) error { return n.exitTask(int(op.Task)) }), ops.KindExit)
	calls.Add(errCall(func(n *ns, op ops.Op) error { return n.tasks.interrupt(int(op.Task)) }), ops.KindInterrupt)
	calls.Add(errnoCall((*ns).forkTask), ops.KindForkTask)
	calls.Add(errCall((*ns).unshare), ops.KindUnshare)
	calls.Add(errCall((*ns).setns), ops.KindSetns)
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
