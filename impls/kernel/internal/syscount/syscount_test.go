//go:build linux

package syscount

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The counter counts what the thread enters: a thousand getpid calls
// between two reads are a thousand and one (the second read), and a few
// more where the Go runtime preempted the thread (each signal handler
// returns through rt_sigreturn, a system call too).
func TestCountsTheThreadsCalls(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := Open()
	if errors.Is(err, ErrUnavailable) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) {
		t.Skipf("no syscall counter here (%v): needs root and the raw_syscalls tracepoint", err)
	}
	require.NoError(t, err)
	defer c.Close()
	before, err := c.Read()
	require.NoError(t, err)
	for range 1000 {
		unix.Getpid()
	}
	after, err := c.Read()
	require.NoError(t, err)
	require.GreaterOrEqual(t, after-before, int64(1001))
	require.Less(t, after-before, int64(1050))
}
