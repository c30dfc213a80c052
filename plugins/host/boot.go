package host

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// A plugin need not be a child process the host execs: Launch.Boot starts
// it some other way (a kernel side inside a QEMU guest, package sides) and
// says where it serves once it does. The host then reattaches go-plugin's
// client to that address (go-plugin's ReattachConfig): no handshake on
// stdout, no relay process; everything else (calls, crashes, hangs, stop)
// is the same as for a process.

// Booted is a plugin that Launch.Boot started and that serves.
type Booted interface {
	// Addr is where its gRPC is reached.
	Addr() net.Addr
	// Handshake is its go-plugin handshake line
	// ("CORE|APP|NETWORK|ADDR|grpc"), for its protocol version.
	Handshake() string
	// Pid is the process that runs it, leader of a process group of its
	// own, which stopping the plugin kills.
	Pid() int
	// Wait waits until that process has exited (and is reaped).
	Wait() error
	// ProcessState says how it ended, once Wait returned.
	ProcessState() *os.ProcessState
	// Slowdown is how many times longer its calls take than natively (at
	// least 1): the call timeout is multiplied by it.
	Slowdown() float64
}

// BootFunc starts a plugin with env ("KEY=value": the plugin handshake's
// cookie) in its environment; it writes what the plugin prints while it
// starts (a guest's console) to console, and returns once the plugin
// serves, or fails within ctx.
type BootFunc func(ctx context.Context, console io.Writer, env []string) (Booted, error)

// BootTimeout is the least time a Launch.Boot gets to serve.
const BootTimeout = 5 * time.Minute

// launchBooted starts the plugin through Launch.Boot and reattaches to it.
func (p *Plugin) launchBooted(ctx context.Context) (*proc, error) {
	name := p.name
	tail := &stderrTail{}
	// A guest's boot is not scaled by a slowdown it has not measured yet:
	// it gets BootTimeout at least (minutes on a loaded machine under TCG).
	startTimeout := max(p.spec.CallTimeout, BootTimeout)
	bctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	hc := plugins.HandshakeConfig()
	b, err := p.spec.Boot(bctx, tail, []string{hc.MagicCookieKey + "=" + hc.MagicCookieValue})
	if err != nil {
		if ctx.Err() != nil {
			return nil, &PluginError{Plugin: name, Kind: Start, Err: fmt.Errorf("launch abandoned: %w", ctx.Err())}
		}
		return nil, &PluginError{Plugin: name, Kind: Start, Err: err}
	}
	if err := checkHandshake(b.Handshake()); err != nil {
		_ = killGroup(b.Pid())
		_ = b.Wait()
		return nil, &PluginError{Plugin: name, Kind: Handshake, Err: err}
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  plugins.HandshakeConfig(),
		Plugins:          plugins.PluginSet(nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		Logger:           p.logger,
		Reattach: &plugin.ReattachConfig{
			Protocol:        plugin.ProtocolGRPC,
			ProtocolVersion: plugins.ProtocolVersion,
			Addr:            b.Addr(),
			ReattachFunc:    func() (runner.AttachedRunner, error) { return bootedRunner{b}, nil },
		},
		SyncStdout: p.logger.Named("stdout").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
		SyncStderr: p.logger.Named("stderr").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
		// gRPC gives a connection 20 s to answer its preface; a guest under
		// TCG on a loaded machine may take longer: the boot's bound.
		GRPCDialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.DefaultConfig, MinConnectTimeout: startTimeout})},
	})
	pr := &proc{client: client, booted: b, kill: func() {}, pid: b.Pid(), stderr: tail}
	if _, err := client.Client(); err != nil {
		pr.stop(false)
		return nil, &PluginError{Plugin: name, Kind: Handshake, Err: fmt.Errorf("reattaching to %s: %w", b.Addr(), err)}
	}
	return p.finishLaunch(ctx, pr)
}

// checkHandshake checks the protocol version and the protocol of a
// go-plugin handshake line.
func checkHandshake(line string) error {
	f := strings.Split(line, "|")
	if len(f) < 5 {
		return fmt.Errorf("not an ipcfuzz plugin: its handshake %q is not a go-plugin line", truncate(line, 120))
	}
	if v, err := strconv.Atoi(f[1]); err != nil || v != plugins.ProtocolVersion {
		return fmt.Errorf("plugin speaks ipcfuzz protocol version %s, this host speaks %d (rebuild the plugin)", f[1], plugins.ProtocolVersion)
	}
	if f[4] != string(plugin.ProtocolGRPC) {
		return fmt.Errorf("plugin speaks %s; ipcfuzz plugins speak gRPC (serve it with plugins.Serve)", f[4])
	}
	return nil
}

// bootedRunner is go-plugin's view of a booted plugin's process.
type bootedRunner struct{ b Booted }

func (r bootedRunner) Wait(context.Context) error { return r.b.Wait() }

func (r bootedRunner) Kill(context.Context) error {
	if err := killGroup(r.b.Pid()); err != nil && err != os.ErrProcessDone {
		return err
	}
	return r.b.Wait()
}

func (r bootedRunner) ID() string { return strconv.Itoa(r.b.Pid()) }

func (bootedRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (bootedRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// scaled is the call timeout d for a plugin whose calls take slowdown
// times as long.
func scaled(d time.Duration, slowdown float64) time.Duration {
	if d <= 0 || slowdown <= 1 {
		return d
	}
	return time.Duration(float64(d) * slowdown)
}
