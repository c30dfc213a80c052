//go:build linux && amd64

package kernel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// TestRunCovered: a run that asks for coverage gets the same results as one
// that does not; where the kernel has KCOV (a guest of ci/kernel.sh
// --cover) every operation of the worker thread comes with program
// counters, and elsewhere none does (this machine's kernel has no KCOV).
func TestRunCovered(t *testing.T) {
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Key: 5, Creat: true, Mode: 0o600},
		{Kind: ops.KindStat, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
	}
	plain, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	require.Nil(t, plain.Observed, "no observation asked for, none made")
	covered, err := m.Run(ops.Config{Observe: ops.Observing{Cover: true}}, script)
	require.NoError(t, err)
	require.Equal(t, plain.Results, covered.Results)
	require.Equal(t, plain.Snapshot, covered.Snapshot)
	_, fact := m.Facts().Get(ops.FactKCOV)
	require.Equal(t, kcov.Available(), fact, "the kcov fact says whether %s exists", kcov.Path)
	if !kcov.Available() {
		for i, o := range covered.Observed {
			require.Nil(t, o.PCs, "op %d has PCs on a kernel without KCOV", i)
		}
		t.Skipf("the rest needs a kernel with KCOV: %v", kcov.ErrNoKCOV)
	}
	require.Len(t, covered.Observed, len(script))
	for i, o := range covered.Observed {
		require.NotEmpty(t, o.PCs, "op %d (%s) reached no kernel code", i, ops.FormatOp(script[i]))
	}
}

// taskScript has task processes run calls: a msgrcv by t1 that sleeps
// until the msgsnd of t0 that follows wakes it, then a msgsnd by t2.
func taskScript(t *testing.T) []ops.Op {
	s, err := ops.ParseString(`subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgrcv msg h1 size=64 type=0 task=t1 -> blocked
msgsnd msg h1 type=1 size=5 fill=0 nowait -> ok ; t1 type=1 text=abcde
msgsnd msg h1 type=2 size=3 fill=1 task=t2 -> ok
`)
	require.NoError(t, err)
	var script []ops.Op
	for _, st := range s.Steps {
		script = append(script, st.Op)
	}
	return script
}

// The task processes' calls are traced as the worker thread's are: a run
// with coverage gets the same results as one without (this machine, with
// no KCOV, gets no PCs at all).
func TestRunCoveredTasks(t *testing.T) {
	m := newModel(t)
	script := taskScript(t)
	plain, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	covered, err := m.Run(ops.Config{Observe: ops.Observing{Cover: true}}, script)
	require.NoError(t, err)
	require.Equal(t, plain.Results, covered.Results)
	require.Equal(t, plain.Snapshot, covered.Snapshot)
	if !kcov.Available() {
		for i, o := range covered.Observed {
			require.Nil(t, o.PCs, "op %d has PCs on a kernel without KCOV", i)
		}
	}
}

// The task processes' own PCs, with the worker thread untraced (runTraced
// without a Tracer): every task call asks for coverage, and runs as it
// would without. Where the kernel has KCOV, t1's msgrcv comes back with
// PCs during the msgsnd that wakes it, not during its own op (it sleeps),
// and t2's msgsnd with its own.
func TestTaskCallsTraced(t *testing.T) {
	m := newModel(t)
	script := taskScript(t)
	plain, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	var traced ops.Outcome
	cfg := ops.Config{Observe: ops.Observing{Cover: true}}
	onWorker(m, func() { traced, err = m.n.runTraced(cfg, script, nil, nil) })
	require.NoError(t, err)
	require.Equal(t, plain.Results, traced.Results)
	require.Equal(t, plain.Snapshot, traced.Snapshot)
	require.Len(t, traced.Observed, len(script))
	var cov *task.Coverage
	onWorker(m, func() { cov = m.n.tasks.pool.Cover() })
	require.False(t, cov.On, "coverage stays on after the run")
	if !kcov.Available() {
		for i, o := range traced.Observed {
			require.Empty(t, o.PCs, "op %d has PCs on a kernel without KCOV", i)
		}
		t.Skipf("no %s: the rest needs a kernel built with ci/kernel.sh --cover", kcov.Path)
	}
	require.Empty(t, traced.Observed[0].PCs, "t0's get: the worker thread is not traced here")
	require.Empty(t, traced.Observed[1].PCs, "t1's msgrcv sleeps: its answer is not collected during its op")
	require.NotEmpty(t, traced.Observed[2].PCs, "t1's msgrcv answers during the msgsnd that wakes it")
	require.NotEmpty(t, traced.Observed[3].PCs, "t2's msgsnd")
}
