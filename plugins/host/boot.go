package host

import (
	"context"
	"errors"
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

// DefaultConnectTimeout is how long a booted plugin's connection waits for
// the answer to its preface, per unit of slowdown (10 s at least). Now and
// then (a launch in 10 to 15 with two guests booting on a loaded machine)
// the first connection to a guest gets no answer at all, where the next
// one, a second later, is answered at once: the connection is given up
// after this, and the launch's Info call waits for the next.
const DefaultConnectTimeout = 5 * time.Second

// MaxLaunchEvents bounds the launch events a Plugin keeps until they are
// taken.
const MaxLaunchEvents = 64

// ErrInfrastructure marks a launch of a booted plugin that failed twice
// for reasons outside the plugin and its image: a guest not ready in time,
// or one that booted and then did not answer; the run cannot go on, and
// nothing was found.
var ErrInfrastructure = errors.New("the launch failed twice for infrastructure reasons (not a finding)")

// launchBooted starts the plugin through Launch.Boot and reattaches to it;
// a launch that fails for infrastructure reasons (infraLaunch) is tried
// once more, and recorded as a launch event.
func (p *Plugin) launchBooted(ctx context.Context) (*proc, error) {
	pr, err := p.launchBootedOnce(ctx)
	if err == nil || ctx.Err() != nil || !infraLaunch(err) {
		return pr, err
	}
	p.mu.Lock()
	if len(p.events) < MaxLaunchEvents {
		p.events = append(p.events, fmt.Sprintf("launch failed, tried again: %s", oneLine(err.Error())))
	}
	p.mu.Unlock()
	p.logger.Warn("launch failed for infrastructure reasons; trying once more", "error", oneLine(err.Error()))
	pr, err2 := p.launchBootedOnce(ctx)
	if err2 == nil || ctx.Err() != nil || !infraLaunch(err2) {
		return pr, err2
	}
	var pe *PluginError
	if errors.As(err2, &pe) {
		return nil, &PluginError{Plugin: pe.Plugin, Kind: pe.Kind, Stderr: pe.Stderr, Err: fmt.Errorf("%w: %w (the first time: %s)", ErrInfrastructure, pe.Err, oneLine(err.Error()))}
	}
	return nil, fmt.Errorf("%w: %w", ErrInfrastructure, err2)
}

// LaunchEvents returns, and forgets, the launches of a booted plugin that
// failed for infrastructure reasons and were tried again since the last
// call: events of the run, not findings.
func (p *Plugin) LaunchEvents() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.events
	p.events = nil
	return out
}

// infraLaunch reports whether a booted launch failed for reasons outside
// the plugin and its image: the guest was not ready in time (a loaded
// machine), or it booted and then lost its connection or did not answer.
// A protocol mismatch, a missing QEMU, a bad image or a guest that failed
// or exited are the plugin's or the user's and fail at once.
func infraLaunch(err error) bool {
	var pe *PluginError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Kind {
	case Start:
		return errors.Is(pe.Err, context.DeadlineExceeded)
	case Crashed, Hung:
		return true
	case Handshake:
		return errors.Is(pe.Err, errReattach)
	}
	return false
}

// errReattach marks a failed reattach to a booted plugin's address.
var errReattach = errors.New("reattaching")

// launchBootedOnce is one launch through Launch.Boot and the reattach.
func (p *Plugin) launchBootedOnce(ctx context.Context) (*proc, error) {
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
	connectTimeout := p.spec.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = min(max(scaled(DefaultConnectTimeout, b.Slowdown()), 10*time.Second), startTimeout)
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
		SyncStderr: syncStderr(p.logger, tail),
		// gRPC gives a connection 20 s to answer its preface; a guest under
		// TCG answers as much slower as it runs.
		GRPCDialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.DefaultConfig, MinConnectTimeout: connectTimeout})},
	})
	pr := &proc{client: client, booted: b, kill: func() {}, pid: b.Pid(), stderr: tail}
	if _, err := client.Client(); err != nil {
		pr.stop(false)
		return nil, &PluginError{Plugin: name, Kind: Handshake, Err: fmt.Errorf("%w to %s: %w", errReattach, b.Addr(), err)}
	}
	// go-plugin's client swallows a first connection that failed (it
	// reports its stdio stream unavailable, not an error): the launch's
	// Info call waits for a connection that answers (gRPC reconnects after
	// a second or so), within twice the connect timeout, and fails when
	// none does.
	wait := 2*connectTimeout + reconnectSlack(connectTimeout)
	cctx, ccancel := context.WithTimeout(ctx, wait)
	defer ccancel()
	pr, err = p.finishLaunch(cctx, pr)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		var pe *PluginError
		if !errors.As(err, &pe) {
			// The connect timeout, not the caller, ended the Info call.
			err = &PluginError{Plugin: name, Kind: Hung, Err: fmt.Errorf("no answer from %s within %v: %w", b.Addr(), wait, err)}
		}
	}
	return pr, err
}

// reconnectSlack is what a launch's Info call is given beyond twice the
// connect timeout, for gRPC's reconnect after a silent first connection
// (its backoff starts at 1 s, with 20 % jitter): 5 s, or less for a short
// connect timeout, never below 3 s.
func reconnectSlack(connectTimeout time.Duration) time.Duration {
	return min(5*time.Second, max(3*time.Second, 4*connectTimeout))
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
