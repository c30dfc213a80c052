//go:build linux && amd64

package creds

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func dumpableNow(t *testing.T) uintptr {
	t.Helper()
	d, err := dumpable()
	require.NoError(t, err)
	return d
}

// onLockedThread runs f on a thread of its own, which exits afterwards
// (whatever f left of its credentials goes with it).
func onLockedThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(done)
		f()
	}()
	<-done
}

// Two threads switch in turn, the second while the first runs as a user:
// each one's credentials come back, and the dumpable flag (the process's)
// comes back once the last one has switched back.
func TestNestedSwitches(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	want := dumpableNow(t)
	var errs []error
	onLockedThread(func() {
		self, err := Current()
		require.NoError(t, err)
		errs = append(errs, BecomeUser(self, 1000))
		onLockedThread(func() {
			other, err := Current()
			require.NoError(t, err)
			errs = append(errs, BecomeUser(other, 1001), Restore(other))
		})
		errs = append(errs, Restore(self))
		now, err := Current()
		require.NoError(t, err)
		require.True(t, now.Equal(self), "%v != %v", now, self)
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, want, dumpableNow(t))
}

// A restore that fails its check still puts the dumpable flag back.
func TestFailedRestorePutsDumpableBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	want := dumpableNow(t)
	var err error
	onLockedThread(func() {
		self, cerr := Current()
		require.NoError(t, cerr)
		require.NoError(t, BecomeUser(self, 1000))
		err = Restore(Creds{}) // not what the thread had
	})
	require.ErrorContains(t, err, "credentials not restored")
	require.Equal(t, want, dumpableNow(t))
	euid := syscall.Geteuid()
	require.Equal(t, 0, euid, "only the thread that switched changed")
}
