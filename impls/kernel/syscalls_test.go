//go:build linux && amd64

package kernel

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/syscount"
)

// canCount reports whether this machine lets a thread count its system
// calls (root, the raw_syscalls tracepoint).
func canCount(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := syscount.Open()
	if err != nil {
		if errors.Is(err, syscount.ErrUnavailable) {
			t.Skipf("the kernel offers no syscall counter here: %v", err)
		}
		t.Skipf("no syscall counter for this user: %v", err)
	}
	_ = c.Close()
}

// With times asked for, each operation's observation counts the system
// calls the worker made for it: a get and an IPC_RMID on the worker thread
// are one call each (and a signal's return where the thread was preempted), a listing reads /proc (open, read, close, at least),
// and a model that is not asked counts nothing.
func TestObservedSyscalls(t *testing.T) {
	canCount(t)
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Creat: true, Mode: 0o600},
		{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindList, Type: ops.Msg},
	}
	out, err := m.Run(ops.Config{Observe: ops.Observing{Time: true}}, script)
	require.NoError(t, err)
	require.Len(t, out.Observed, len(script))
	// (A preemption of the thread adds its signal's rt_sigreturn.)
	for i, what := range []string{"msgget", "msgctl(IPC_RMID)"} {
		require.GreaterOrEqual(t, out.Observed[i].Syscalls, int64(1), what)
		require.LessOrEqual(t, out.Observed[i].Syscalls, int64(4), what)
	}
	require.GreaterOrEqual(t, out.Observed[2].Syscalls, int64(3), "open, read, close of /proc/sysvipc/msg")
	plain, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	require.Nil(t, plain.Observed)
}

// With times asked for, each operation's observation holds the CPU time
// of its own system calls, the worker's (a get, a listing's reads of
// /proc, a churn's loop) and a task's (timed in the task), within the
// operation's time; a model that is not asked measures nothing.
func TestObservedSyscallTime(t *testing.T) {
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Creat: true, Mode: 0o600},
		{Kind: ops.KindGet, Type: ops.Msg, Task: 1, Bind: 2, Key: 0x51, Creat: true, Mode: 0o600},
		{Kind: ops.KindRmid, Type: ops.Msg, Task: 1, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindList, Type: ops.Msg},
		{Kind: ops.KindChurn, Type: ops.Msg, Value: 200},
	}
	out, err := m.Run(ops.Config{Observe: ops.Observing{Time: true}}, script)
	require.NoError(t, err)
	require.Len(t, out.Observed, len(script))
	for i, o := range out.Observed {
		require.Positive(t, o.SyscallNanos, "op %d (%s): no CPU time in its system calls", i, script[i].Kind)
		require.LessOrEqual(t, o.SyscallNanos, o.Nanos, "op %d (%s): more CPU in its system calls than the operation took", i, script[i].Kind)
	}
	// 200 creations and removals take more of the kernel than one get.
	require.Greater(t, out.Observed[4].SyscallNanos, out.Observed[0].SyscallNanos)
}
