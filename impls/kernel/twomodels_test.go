//go:build linux && amd64

package kernel

import (
	"context"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// processDumpable reads the dumpable flag, which is the process's, not a
// thread's.
func processDumpable() uintptr {
	d, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	return d
}

// Two Models in one process, as --in-process with two jobs makes them: an
// euid change clears the dumpable flag of the whole process, so one
// worker running an op as another user must not spoil what the other
// takes for its own credentials, nor leave the process non-dumpable.
func TestTwoModelsSwitchUsers(t *testing.T) {
	want := processDumpable()
	asUser := ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: 5, Creat: true, Mode: 0o600, As: 1000}
	rootOnly := ops.Op{Kind: ops.KindLimit, Type: ops.Msg, Value: 5}
	ctx := context.Background()

	t.Run("started while another runs as a user", func(t *testing.T) {
		a := newModel(t)
		var b ops.Model
		var newErr error
		var ran bool
		var err error
		onWorker(a, func() {
			// b's worker starts while a's is uid 1000.
			ran, err = a.n.w.AsUser(1000, func() { b, newErr = New() })
		})
		require.NoError(t, err)
		require.True(t, ran)
		require.NoError(t, newErr)
		t.Cleanup(func() { require.NoError(t, b.Close()) })
		local := ops.NewLocal(ops.Info{Name: "kernel"}, b)
		require.NoError(t, local.Reset(ctx, ops.Config{}))
		res, err := local.Apply(ctx, []ops.Op{asUser, rootOnly}, nil)
		require.NoError(t, err)
		require.Equal(t, []ops.Errno{ops.OK, ops.OK}, []ops.Errno{res[0].Err, res[1].Err})
		require.Equal(t, want, processDumpable(), "dumpable flag restored")
	})

	t.Run("one restores while the other runs as a user", func(t *testing.T) {
		a, b := newModel(t), newModel(t)
		local := ops.NewLocal(ops.Info{Name: "kernel"}, b)
		require.NoError(t, local.Reset(ctx, ops.Config{}))
		var res []ops.Result
		var applyErr, err error
		onWorker(a, func() {
			_, err = a.n.w.AsUser(1000, func() { res, applyErr = local.Apply(ctx, []ops.Op{asUser, rootOnly}, nil) })
		})
		require.NoError(t, err)
		require.NoError(t, applyErr)
		require.Equal(t, []ops.Errno{ops.OK, ops.OK}, []ops.Errno{res[0].Err, res[1].Err})
		require.Equal(t, want, processDumpable(), "dumpable flag restored by the last to switch back")
	})

	t.Run("at once", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			local := ops.NewLocal(ops.Info{Name: "kernel"}, newModel(t))
			wg.Go(func() {
				if errs[i] = local.Reset(ctx, ops.Config{}); errs[i] != nil {
					return
				}
				for range 2000 {
					if _, errs[i] = local.Apply(ctx, []ops.Op{asUser, rootOnly}, nil); errs[i] != nil {
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, want, processDumpable(), "dumpable flag restored")
	})
}

// Two Models in one process share its address space: the segments one
// worker (t0) attached are in the other's /proc/<pid>/maps too, and must
// not show among its attachments.
func TestTwoModelsAttach(t *testing.T) {
	a, b := newModel(t), newModel(t)
	for _, m := range []*Model{a, b} {
		id := create(t, m, private(ops.Shm))
		r := apply(t, m, ops.Op{Kind: ops.KindShmat, Type: ops.Shm, Obj: ops.Ref{ID: id}, Bind: 1})
		require.Equal(t, ops.OK, r.Err)
	}
	for _, m := range []*Model{a, b} {
		s := snapshot(t, m)
		require.Equal(t, []ops.Attachment{{Task: ops.TaskPID(0, 0), ID: 0, Att: 1}}, s.Shm.Attachments)
	}
}
