package host

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A plugin stopped from outside (SIGSTOP) while a call waits on it is
// given up as hung once it has stayed stopped for StoppedGrace, long
// before the call timeout (minutes for a guest under TCG); the process is
// killed, and the plugin comes back on Restart.
func TestStoppedPluginIsGivenUp(t *testing.T) {
	t.Parallel() // seconds of waiting (or, for the large exec, of CPU) beside the others'
	spec := launch(t, "toy")
	spec.CallTimeout = time.Hour // only the watch can end the call
	p := open(t, spec)
	pid := p.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	// kill returns before every thread of the process has stopped.
	require.Eventually(t, func() bool { s, err := processStopped(pid); return err == nil && s }, 30*time.Second, time.Millisecond)
	// The safety net: a call the watch missed fails on this deadline,
	// with another error than the one required below.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := p.Snapshot(ctx, nil)
	require.Error(t, err)
	t.Logf("error: %v", err)
	require.Equal(t, Hung, kindOf(err))
	require.ErrorIs(t, err, errStopped)
	require.NoError(t, ctx.Err())
	require.Eventually(t, func() bool { return gone(pid) }, 30*time.Second, 50*time.Millisecond, "the stopped plugin %d was not killed", pid)
	require.NoError(t, p.Restart(ctx))
	_, err = p.Snapshot(ctx, nil)
	require.NoError(t, err)
}

func TestProcessStopped(t *testing.T) {
	stopped, err := processStopped(syscall.Getpid())
	require.NoError(t, err)
	require.False(t, stopped)
	_, err = processStopped(1 << 30)
	require.Error(t, err)
}
