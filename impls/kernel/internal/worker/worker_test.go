//go:build linux && amd64

package worker

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/creds"
)

func start(t *testing.T) *Thread {
	t.Helper()
	w, err := Start(nil)
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("needs CAP_SYS_ADMIN to create a private IPC namespace: %v", err)
	}
	require.NoError(t, err)
	return w
}

func TestNoNamespaceMessage(t *testing.T) {
	// A thread without CAP_SYS_ADMIN gets the one-line refusal: root's
	// drops it first (the thread stays locked, so it exits with this
	// goroutine); any other user has none to drop.
	errc := make(chan error)
	GoLocked(func() {
		if os.Geteuid() != 0 {
			errc <- EnterNewNamespace()
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, creds.Keep, 1000, creds.Keep); e != 0 {
			errc <- fmt.Errorf("setresuid: %w", e)
			return
		}
		errc <- EnterNewNamespace()
	})
	err := <-errc
	require.ErrorIs(t, err, syscall.EPERM)
	require.Equal(t, "kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: operation not permitted); run as root: it needs CAP_SYS_ADMIN", err.Error())
}

func TestGoLockedAvoidsMainThread(t *testing.T) {
	tids := make(chan int)
	for range 100 {
		GoLocked(func() { tids <- syscall.Gettid() })
		require.NotEqual(t, syscall.Getpid(), <-tids)
	}
}

// A thread runs its calls on itself, as another user when asked, and is
// itself again after each.
func TestRunAsUser(t *testing.T) {
	w := start(t)
	defer w.Stop()
	var tid, euid int
	var ran bool
	var err error
	w.Run(func() {
		tid = syscall.Gettid()
		ran, err = w.AsUser(1000, func() { euid = syscall.Geteuid() })
	})
	require.NoError(t, err)
	require.True(t, ran)
	require.Equal(t, w.Tid(), tid)
	require.Equal(t, 1000, euid)
	w.Run(func() { euid = syscall.Geteuid() })
	require.Equal(t, os.Geteuid(), euid)
	require.NoError(t, w.Discarded())
}

// A thread that cannot restore its credentials is discarded: it ends, and
// its atExit runs.
func TestDiscard(t *testing.T) {
	ended := make(chan struct{})
	w, err := Start(func() { close(ended) })
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("needs CAP_SYS_ADMIN: %v", err)
	}
	require.NoError(t, err)
	w.Run(func() { w.self = creds.Creds{} }) // not what the thread has
	var ran bool
	w.Run(func() { ran, err = w.AsUser(1000, func() {}) })
	require.True(t, ran)
	require.ErrorContains(t, err, "discarded")
	require.Equal(t, err, w.Discarded())
	<-ended
	w.WaitExit()
	_, err = os.Stat(fmt.Sprintf("/proc/self/task/%d", w.Tid()))
	require.ErrorIs(t, err, os.ErrNotExist, "the discarded thread exited")
}
