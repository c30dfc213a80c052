package host

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// booted is a plugin started the way a guest's is: by Launch.Boot, not by
// the host's exec, and reached at the address its handshake gives. Here
// the "guest" is the test binary serving a mode in a process group of its
// own, reached on its unix socket.
type booted struct {
	cmd  *exec.Cmd
	addr net.Addr
	hs   string
	done chan struct{}
}

func (b *booted) Addr() net.Addr                 { return b.addr }
func (b *booted) Handshake() string              { return b.hs }
func (b *booted) Pid() int                       { return b.cmd.Process.Pid }
func (b *booted) Wait() error                    { <-b.done; return nil }
func (b *booted) ProcessState() *os.ProcessState { return b.cmd.ProcessState }
func (b *booted) Slowdown() float64              { return 3 }

// bootMode is a BootFunc that starts the test binary serving mode.
func bootMode(t *testing.T, mode string) BootFunc {
	return func(ctx context.Context, console io.Writer, env []string) (Booted, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), env...), modeEnv+"="+mode, "PLUGIN_UNIX_SOCKET_DIR="+t.TempDir())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stderr = console
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		b := &booted{cmd: cmd, done: make(chan struct{})}
		line, err := bufio.NewReader(out).ReadString('\n')
		go func() { _, _ = io.Copy(io.Discard, out); _ = cmd.Wait(); close(b.done) }()
		if err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return nil, errors.New("no handshake")
		}
		b.hs = strings.TrimSpace(line)
		f := strings.Split(b.hs, "|")
		b.addr = &net.UnixAddr{Name: f[3], Net: "unix"}
		return b, nil
	}
}

// A booted plugin is reattached to, serves like a process the host
// started, has its call timeout multiplied by its slowdown, and is gone
// after Close.
func TestBootedPlugin(t *testing.T) {
	spec := launch(t, "toy")
	spec.Boot = bootMode(t, "toy")
	p := open(t, spec)
	require.Equal(t, 3*spec.CallTimeout, p.timeout)
	info, err := p.Info(context.Background())
	require.NoError(t, err)
	require.Equal(t, "toy", info.Name)
	require.NoError(t, p.Reset(context.Background(), ops.Config{}))
	get := ops.Op{Kind: ops.KindGet, Type: ops.Msg, Creat: true, Mode: 0o600}
	rs, err := p.Apply(context.Background(), []ops.Op{get, get}, nil)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	pid := p.cur.pid
	require.NoError(t, p.Close())
	require.True(t, gone(pid) || isZombie(pid), "the booted plugin outlived Close")
}

// A booted plugin that crashes is Crashed, as a process is.
func TestBootedPluginCrash(t *testing.T) {
	spec := launch(t, "crash", crashAtEnv+"=1")
	spec.Boot = bootMode(t, "crash")
	p := open(t, spec)
	require.NoError(t, p.Reset(context.Background(), ops.Config{}))
	_, err := p.Apply(context.Background(), []ops.Op{{Kind: ops.KindGet, Type: ops.Msg, Creat: true, Mode: 0o600}}, nil)
	require.Error(t, err)
	require.Equal(t, Crashed, kindOf(err), "%v", err)
}

// A handshake of another protocol version is refused before anything is
// called.
func TestCheckHandshake(t *testing.T) {
	require.NoError(t, checkHandshake("1|2|unix|/tmp/x|grpc|"))
	require.ErrorContains(t, checkHandshake("1|99|unix|/tmp/x|grpc|"), "protocol version 99")
	require.ErrorContains(t, checkHandshake("1|2|unix|/tmp/x|netrpc|"), "gRPC")
	require.ErrorContains(t, checkHandshake("hello"), "not a go-plugin line")
}
