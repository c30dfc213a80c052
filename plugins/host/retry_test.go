package host

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// bootSilent is a BootFunc whose "guest" boots (a process in a group of its
// own) and accepts the host's connection on its socket, but never answers
// it: what a launch whose gRPC preface gets no answer looks like.
func bootSilent(t *testing.T) BootFunc {
	return func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		sock := filepath.Join(t.TempDir(), "s")
		l, err := net.Listen("unix", sock)
		if err != nil {
			return nil, err
		}
		var held []net.Conn
		accepted := make(chan struct{})
		go func() {
			defer close(accepted)
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				held = append(held, c) // held open, never answered
			}
		}()
		t.Cleanup(func() {
			l.Close()
			<-accepted
			for _, c := range held {
				c.Close()
			}
		})
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		b := &booted{cmd: cmd, addr: &net.UnixAddr{Name: sock, Net: "unix"}, done: make(chan struct{}),
			hs: fmt.Sprintf("1|%d|unix|%s|grpc|", plugins.ProtocolVersion, sock)}
		go func() { _ = cmd.Wait(); close(b.done) }()
		return b, nil
	}
}

// A booted plugin whose first launch gets no answer is launched once more:
// the run goes on with the second, and the failed launch is an event the
// runner takes (LaunchEvents), once; the silent guest is gone.
func TestBootedLaunchRetriedOnce(t *testing.T) {
	t.Parallel() // seconds of waiting (or, for the large exec, of CPU) beside the others'
	var boots atomic.Int32
	silent, toy := bootSilent(t), bootMode(t, "toy")
	var first Booted
	spec := launch(t, "toy")
	spec.ConnectTimeout = 300 * time.Millisecond
	spec.Boot = func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		if boots.Add(1) == 1 {
			b, err := silent(ctx, console, env)
			first = b
			return b, err
		}
		return toy(ctx, console, env)
	}
	p := open(t, spec)
	require.EqualValues(t, 2, boots.Load())
	info, err := p.Info(context.Background())
	require.NoError(t, err)
	require.Equal(t, "toy", info.Name)
	ev := p.LaunchEvents()
	require.Len(t, ev, 1)
	require.Contains(t, ev[0], "launch failed, tried again")
	require.Empty(t, p.LaunchEvents(), "an event is taken once")
	require.Eventually(t, func() bool { return gone(first.Pid()) || isZombie(first.Pid()) }, 10*time.Second, 10*time.Millisecond, "the silent guest outlived its failed launch")
}

// A booted plugin that twice gets no answer fails to open with
// ErrInfrastructure (the CLI's exit 3), after exactly two boots.
func TestBootedLaunchFailsTwiceAsInfrastructure(t *testing.T) {
	t.Parallel() // seconds of waiting (or, for the large exec, of CPU) beside the others'
	var boots atomic.Int32
	silent := bootSilent(t)
	spec := launch(t, "toy")
	spec.ConnectTimeout = 300 * time.Millisecond
	spec.Boot = func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		boots.Add(1)
		return silent(ctx, console, env)
	}
	_, err := Open(context.Background(), spec)
	require.ErrorIs(t, err, ErrInfrastructure)
	require.EqualValues(t, 2, boots.Load())
}

// A launch that fails for the plugin's own reasons (another protocol
// version) is not tried again.
func TestBootedLaunchOfTheWrongProtocolNotRetried(t *testing.T) {
	var boots atomic.Int32
	silent := bootSilent(t)
	spec := launch(t, "toy")
	spec.Boot = func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		boots.Add(1)
		b, err := silent(ctx, console, env)
		if err == nil {
			b.(*booted).hs = "1|99|unix|/nowhere|grpc|"
		}
		return b, err
	}
	_, err := Open(context.Background(), spec)
	require.ErrorContains(t, err, "protocol version 99")
	require.NotErrorIs(t, err, ErrInfrastructure)
	require.EqualValues(t, 1, boots.Load())
}

// A booted plugin whose first connection gets no answer, where the next
// is answered (what a guest did now and then: the log of a launch showed
// 5 minutes of silence, then a reconnect answered at once), serves after
// gRPC's reconnect, without a second boot and without an event.
func TestBootedFirstConnectionSilentThenAnswered(t *testing.T) {
	t.Parallel() // seconds of waiting (or, for the large exec, of CPU) beside the others'
	var boots atomic.Int32
	toy := bootMode(t, "toy")
	spec := launch(t, "toy")
	spec.ConnectTimeout = 500 * time.Millisecond
	spec.Boot = func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		boots.Add(1)
		inner, l, sock, err := bootBehindProxy(t, toy, ctx, console, env)
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		var conns []net.Conn
		go func() {
			defer close(done)
			for n := 0; ; n++ {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c)
				if n == 0 {
					continue // the first: held, never answered
				}
				up, err := net.Dial("unix", inner.addr.String())
				if err != nil {
					c.Close()
					continue
				}
				conns = append(conns, up)
				go func() { _, _ = io.Copy(up, c) }()
				go func() { _, _ = io.Copy(c, up) }()
			}
		}()
		t.Cleanup(func() {
			l.Close()
			<-done
			for _, c := range conns {
				c.Close()
			}
		})
		return &booted{cmd: inner.cmd, addr: &net.UnixAddr{Name: sock, Net: "unix"}, hs: inner.hs, done: inner.done}, nil
	}
	p := open(t, spec)
	info, err := p.Info(context.Background())
	require.NoError(t, err)
	require.Equal(t, "toy", info.Name)
	require.EqualValues(t, 1, boots.Load())
	require.Empty(t, p.LaunchEvents())
}

// Close while a call is in flight on a booted plugin that no longer
// answers (a guest minutes into an ids batch under TCG when the user
// presses ^C: go-plugin's shutdown call waited for its answer for good)
// returns within seconds: a plugin still there after stopGrace is killed,
// which ends its connection and the shutdown call.
func TestCloseOfAnUnansweringGuestEnds(t *testing.T) {
	t.Parallel() // seconds of waiting
	hang := bootMode(t, "hang")
	var frozen atomic.Bool
	spec := launch(t, "hang")
	spec.CallTimeout = time.Hour
	spec.Boot = func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		inner, l, sock, err := bootBehindProxy(t, hang, ctx, console, env)
		if err != nil {
			return nil, err
		}
		// pipe copies from to to until from ends, dropping what it reads
		// once frozen; then it closes to.
		pipe := func(to, from net.Conn) {
			buf := make([]byte, 32<<10)
			for {
				n, err := from.Read(buf)
				if n > 0 && !frozen.Load() {
					if _, err := to.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			to.Close()
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				up, err := net.Dial("unix", inner.addr.String())
				if err != nil {
					c.Close()
					continue
				}
				go pipe(up, c)
				go pipe(c, up)
			}
		}()
		t.Cleanup(func() { l.Close() })
		return &booted{cmd: inner.cmd, addr: &net.UnixAddr{Name: sock, Net: "unix"}, hs: inner.hs, done: inner.done}, nil
	}
	p := open(t, spec)
	pid := p.Pid()
	called := make(chan error, 1)
	go func() {
		_, err := p.Apply(context.Background(), toyScripts(1, 1, 5)[0], nil)
		called <- err
	}()
	time.Sleep(200 * time.Millisecond) // the call is in the plugin
	frozen.Store(true)
	closed := make(chan struct{})
	start := time.Now()
	go func() {
		_ = p.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(stopGrace + 30*time.Second): // a loaded machine delivers the kill late
		t.Fatalf("Close still waits for a guest that does not answer, after %v", time.Since(start))
	}
	t.Logf("closed after %v", time.Since(start))
	require.GreaterOrEqual(t, time.Since(start), stopGrace, "the guest answered: the test proves nothing")
	require.True(t, gone(pid) || isZombie(pid), "pid %d outlived Close", pid)
	require.Error(t, <-called)
}

// bootBehindProxy boots a plugin with boot and listens on a new socket
// that the test proxies to it: the plugin, the listener and its path.
func bootBehindProxy(t *testing.T, boot BootFunc, ctx context.Context, console io.Writer, env []string) (*booted, net.Listener, string, error) {
	b, err := boot(ctx, console, env)
	if err != nil {
		return nil, nil, "", err
	}
	sock := filepath.Join(t.TempDir(), "proxy")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, nil, "", err
	}
	return b.(*booted), l, sock, nil
}
