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
	common := []string{"unshare", "setns into another task's namespace", "a namespace at the end"}
	allEdges = append(allEdges,
		edges{shm.Subsystem, append(common, "shmdt of another namespace's segment"), nsReached, 200},
		edges{msg.Subsystem, append(common, "a second task receives in the namespace"), nsReached, 200},
		edges{sem.Subsystem, append(common, "a switch applies an adjustment"), nsReached, 200},
	)
}

// nsReached runs a script on the optimized model and names what its
// namespace switches did.
func nsReached(t testing.TB, script []ops.Op) map[string]bool {
	m := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	require.NoError(t, m.Reset(ops.Config{}))
	out := map[string]bool{}
	var in [ops.NumTasks]int // the namespace each task is in (0: the script's)
	var undoer [ops.NumTasks]bool
	made := 0
	attachedIn := map[int]int{} // the namespace of each attachment handle
	for _, op := range script {
		r, err := m.Apply(op)
		require.NoError(t, err)
		ok := r.Err == ops.OK && !r.Blocked
		switch op.Kind {
		case ops.KindUnshare, ops.KindSetns:
			if undoer[op.Task] && ok {
				out["a switch applies an adjustment"] = true
			}
			undoer[op.Task] = false
			if op.Kind == ops.KindUnshare && ok {
				made++
				in[op.Task] = made
				out["unshare"] = true
			} else if ok {
				in[op.Task] = in[op.NamespaceOf()]
				if op.NamespaceOf() != 0 && in[op.Task] != 0 {
					out["setns into another task's namespace"] = true
				}
			}
		case ops.KindExit:
			in[op.Task], undoer[op.Task] = 0, false
		case ops.KindForkTask:
			if ok {
				in[op.ForkChild()] = in[op.Task]
			}
		case ops.KindSemop:
			if ok && anyUndo(op) {
				undoer[op.Task] = true
			}
		case ops.KindShmat:
			if ok {
				attachedIn[op.Bind] = in[op.Task]
			}
		case ops.KindShmdt:
			if ns, bound := attachedIn[op.Att]; ok && bound && ns != in[op.Task] {
				out["shmdt of another namespace's segment"] = true
			}
		case ops.KindMsgrcv:
			if ok && op.Task != 0 && in[op.Task] != 0 {
				out["a second task receives in the namespace"] = true
			}
		}
	}
	snap, err := m.Snapshot()
	require.NoError(t, err)
	if len(snap.Namespaces) > 0 {
		out["a namespace at the end"] = true
	}
	return out
}
