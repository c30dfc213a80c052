package props_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/props/msg"
	"github.com/ipcfuzz/ipcfuzz/props/sem"
	"github.com/ipcfuzz/ipcfuzz/props/shm"
)

func init() {
	allEdges = append(allEdges,
		edges{shm.Subsystem, []string{"fork", "fork into a used slot", "fork inherits an attachment"}, forkReached, 200},
		edges{msg.Subsystem, []string{"fork", "fork into a used slot"}, forkReached, 200},
		edges{sem.Subsystem, []string{"fork", "fork into a used slot", "forked child of an undoer exits"}, forkReached, 200},
	)
}

// forkReached runs a script on the optimized model and names what its
// forks did: a fork (ok), one into a slot in use (EBUSY), one whose child
// got a copy of an attachment, and the exit of a child forked from a task
// holding SEM_UNDO adjustments.
func forkReached(t testing.TB, script []ops.Op) map[string]bool {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	require.NoError(t, ns.Reset(ops.Config{}))
	out := map[string]bool{}
	var undoer, childOfUndoer [ops.NumTasks]bool
	for _, op := range script {
		r, err := ns.Apply(op)
		require.NoError(t, err)
		switch {
		case op.Kind == ops.KindSemop && r.Err == ops.OK && !r.Blocked && anyUndo(op):
			undoer[op.Task] = true
		case op.Kind == ops.KindExit:
			if childOfUndoer[op.Task] {
				out["forked child of an undoer exits"] = true
			}
			undoer[op.Task], childOfUndoer[op.Task] = false, false
		case op.Kind == ops.KindForkTask && r.Err == ops.EBUSY:
			out["fork into a used slot"] = true
		case op.Kind == ops.KindForkTask && r.Err == ops.OK:
			out["fork"] = true
			childOfUndoer[op.ForkChild()] = undoer[op.Task]
			snap, err := ns.Snapshot()
			require.NoError(t, err)
			for _, a := range snap.Shm.Attachments {
				if a.Task.Task() == int(op.ForkChild()) {
					out["fork inherits an attachment"] = true
				}
			}
		}
	}
	return out
}

// anyUndo: a semop with a SEM_UNDO sop.
func anyUndo(op ops.Op) bool {
	for _, s := range op.Sem.SopList() {
		if s.Flags&ops.SemUndo != 0 {
			return true
		}
	}
	return false
}
