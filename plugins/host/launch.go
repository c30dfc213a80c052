package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ipcfuzz/ipcfuzz/plugins"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// proc is one running plugin process: one launch of a Launch. A Plugin
// replaces its proc on Restart.
type proc struct {
	client  *plugin.Client
	cmd     *exec.Cmd
	kill    context.CancelFunc // SIGKILLs its process group (exec.CommandContext + inOwnGroup)
	rpc     ipcfuzzv1.ImplClient
	pid     int
	sockDir string
	sockFd  *os.File // holds sockDir's lock (see makeSockDir)
	stderr  *stderrTail
	booted  Booted // started by Launch.Boot: cmd is nil

	stopping atomic.Bool // the host is stopping it: errors from now on are not the plugin's fault
	stopOnce sync.Once
}

// exitGrace is how long a call that lost its connection waits for the
// process to be reaped, to report its exit status.
const exitGrace = 2 * time.Second

// launch starts the plugin process, performs the go-plugin handshake and
// checks that it serves the protocol (one Info call).
func (p *Plugin) launch(ctx context.Context) (*proc, error) {
	name := p.name
	if err := ctx.Err(); err != nil {
		return nil, &PluginError{Plugin: name, Kind: Start, Err: fmt.Errorf("launch abandoned: %w", err)}
	}
	if p.spec.Boot != nil {
		return p.launchBooted(ctx)
	}
	sockDir, sockFd, err := makeSockDir()
	if err != nil {
		return nil, &PluginError{Plugin: name, Kind: Start, Err: fmt.Errorf("socket directory: %w", err)}
	}
	procCtx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, p.spec.Path, p.spec.Args...)
	inOwnGroup(cmd)
	// The host's environment, then the caller's additions, then ours, so ours
	// win; SkipHostEnv keeps go-plugin from appending os.Environ() after them.
	cmd.Env = append(append(append([]string{}, os.Environ()...), p.spec.Env...),
		plugin.EnvUnixSocketDir+"="+sockDir)

	tail := &stderrTail{}
	startTimeout := p.timeout
	if startTimeout <= 0 {
		startTimeout = DefaultCallTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < startTimeout {
		startTimeout = max(time.Until(dl), time.Millisecond)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  plugins.HandshakeConfig(),
		Plugins:          plugins.PluginSet(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		StartTimeout:     startTimeout,
		Logger:           p.logger,
		Stderr:           tail,
		SyncStdout:       p.logger.Named("stdout").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
		SyncStderr:       syncStderr(p.logger, tail),
	})
	pr := &proc{client: client, cmd: cmd, kill: kill, sockDir: sockDir, sockFd: sockFd, stderr: tail}

	// Start in the background so ctx can abandon it: cancelling procCtx kills
	// the process, which ends the handshake wait.
	started := make(chan error, 1)
	go func() {
		_, err := client.Client()
		started <- err
	}()
	select {
	case err = <-started:
	case <-ctx.Done():
		kill()
		err = <-started
		if err == nil {
			err = ctx.Err()
		}
	}
	if cmd.Process != nil { // cmd.Start has returned (client.Client did)
		pr.pid = cmd.Process.Pid
	}
	if err != nil {
		pr.stop(false)
		if ctx.Err() != nil {
			return nil, &PluginError{Plugin: name, Kind: Start, Err: fmt.Errorf("launch abandoned: %w", ctx.Err())}
		}
		return nil, pr.startError(name, p.spec.Path, startTimeout, err)
	}

	return p.finishLaunch(ctx, pr)
}

// finishLaunch dispenses the started client's implementation and checks,
// with one Info call, that it serves ipcfuzz.v1.Impl.
func (p *Plugin) finishLaunch(ctx context.Context, pr *proc) (*proc, error) {
	name := p.name
	client := pr.client
	raw, err := mustClient(client).Dispense(plugins.PluginName)
	if err != nil {
		pr.stop(false)
		return nil, &PluginError{Plugin: name, Kind: Handshake, Err: fmt.Errorf("dispense: %w", err)}
	}
	rpc, ok := raw.(ipcfuzzv1.ImplClient)
	if !ok {
		pr.stop(false)
		return nil, &PluginError{Plugin: name, Kind: Handshake, Err: fmt.Errorf("dispensed %T, want an ipcfuzzv1.ImplClient", raw)}
	}
	pr.rpc = rpc

	// One Info call proves the process serves ipcfuzz.v1.Impl.
	callCtx, cancel := p.callContext(ctx)
	defer cancel()
	begin := time.Now()
	var opts []grpc.CallOption
	if pr.booted != nil {
		// A booted plugin's first connection may get no answer (launchBooted):
		// the call waits through gRPC's reconnect, within ctx.
		opts = append(opts, grpc.WaitForReady(true))
	}
	resp, err := rpc.Info(callCtx, &ipcfuzzv1.InfoRequest{}, opts...)
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			pr.stop(false)
			return nil, &PluginError{Plugin: name, Kind: Handshake,
				Err: fmt.Errorf("speaks gRPC but does not serve the ipcfuzz.v1.Impl service (%s)", status.Convert(err).Message())}
		}
		perr := p.classify(ctx, callCtx, pr, "info", time.Since(begin), err)
		p.forget(pr)
		return nil, perr
	}
	// The packed layout is part of the handshake: operations a plugin
	// built against another vocabulary would decode wrongly, not fail.
	if resp.GetFailure() == nil {
		if _, err := plugins.InfoFromProto(resp.GetInfo()); err != nil {
			pr.stop(false)
			return nil, &PluginError{Plugin: name, Kind: Handshake, Err: err}
		}
	}
	return pr, nil
}

// processState is how the process ended, once it is reaped.
func (pr *proc) processState() *os.ProcessState {
	if pr.booted != nil {
		return pr.booted.ProcessState()
	}
	return pr.cmd.ProcessState
}

func mustClient(c *plugin.Client) plugin.ClientProtocol {
	cp, err := c.Client() // already started: returns the same client
	if err != nil {
		panic(fmt.Sprintf("host: started plugin client has no protocol client: %v", err))
	}
	return cp
}

// stopGrace bounds a graceful stop: go-plugin's shutdown call waits for
// the calls in flight (gRPC's GracefulStop), and a guest may be minutes
// into a batch; past it the process group is SIGKILLed, which ends the
// shutdown call too.
const stopGrace = 5 * time.Second

// stop ends the process and everything it spawned, and removes its socket
// directory. graceful asks the plugin to shut down first (go-plugin waits up
// to 2 s, then kills it; a plugin still busy after stopGrace is killed);
// otherwise its process group is SIGKILLed at once. It returns once the
// process is reaped; later calls wait for the first to finish.
func (pr *proc) stop(graceful bool) {
	pr.stopping.Store(true)
	pr.stopOnce.Do(func() {
		if !graceful {
			_ = killGroup(pr.pid)
		}
		done := make(chan struct{})
		go func() {
			pr.client.Kill()
			close(done)
		}()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-grace.C:
				_ = killGroup(pr.pid) // busy in a call the shutdown waits for
			case <-tick.C:
				if isZombie(pr.pid) { // descendants hold its pipes
					_ = killGroup(pr.pid)
				}
			}
		}
		_ = killGroup(pr.pid) // orphans that held no pipe
		pr.kill()
		removeSockDir(pr.sockDir, pr.sockFd)
	})
}

// exited waits up to d for the process to be reaped and describes how it
// ended ("exit status 3", "signal: killed"), or returns "" if it is still
// running.
func (pr *proc) exited(d time.Duration) string {
	deadline := time.Now().Add(d)
	for !pr.client.Exited() {
		if time.Now().After(deadline) {
			return ""
		}
		if isZombie(pr.pid) { // exited; descendants hold its pipes
			_ = killGroup(pr.pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Exited takes the client's lock, which go-plugin's reaper released after
	// cmd.Wait set ProcessState.
	if ps := pr.processState(); ps != nil {
		return ps.String()
	}
	return "exited"
}

// startError explains a failed launch in one line.
func (pr *proc) startError(name, path string, timeout time.Duration, err error) error {
	var execErr *exec.Error
	var pathErr *fs.PathError
	if errors.As(err, &execErr) || errors.As(err, &pathErr) {
		return &PluginError{Plugin: name, Kind: Start, Err: fmt.Errorf("%s: %w", path, unwrapExec(err))}
	}
	msg := err.Error()
	how := pr.exitedDesc()
	stderr := quoteStderr(pr.stderr.startLine())
	var why string
	switch {
	case strings.HasPrefix(msg, "Unrecognized remote plugin message: "):
		first, _, _ := strings.Cut(strings.TrimPrefix(msg, "Unrecognized remote plugin message: "), "\n")
		if first = strings.TrimSpace(first); first != "" {
			why = fmt.Sprintf("not an ipcfuzz plugin: its first line on stdout was %q, not the go-plugin handshake "+
				"(a plugin must print nothing to stdout before plugins.Serve)", truncate(first, 120))
		} else {
			why = fmt.Sprintf("not an ipcfuzz plugin: it %s before the handshake%s", how, stderr)
		}
	case msg == "plugin exited before we could connect":
		why = fmt.Sprintf("not an ipcfuzz plugin: it %s before the handshake%s", how, stderr)
	case strings.HasPrefix(msg, "timeout while waiting for plugin to start"):
		why = fmt.Sprintf("no handshake within %v (not an ipcfuzz plugin, or stuck before plugins.Serve)%s", timeout, stderr)
	case strings.HasPrefix(msg, "incompatible API version"):
		v := "another"
		if _, after, ok := strings.Cut(msg, "Plugin version: "); ok {
			v, _, _ = strings.Cut(after, ",")
		}
		why = fmt.Sprintf("plugin speaks ipcfuzz protocol version %s, this host speaks %d (rebuild the plugin)", v, plugins.ProtocolVersion)
	case strings.HasPrefix(msg, "incompatible core API version"):
		why = "plugin uses an incompatible go-plugin core protocol (rebuild it against this version of ipcfuzz)"
	case strings.HasPrefix(msg, "unsupported plugin protocol"):
		why = "plugin speaks net/rpc; ipcfuzz plugins speak gRPC (serve it with plugins.Serve)"
	default:
		first, _, _ := strings.Cut(msg, "\n")
		why = fmt.Sprintf("not an ipcfuzz plugin (%s)%s", first, stderr)
	}
	return &PluginError{Plugin: name, Kind: Handshake, Err: errors.New(why)}
}

// exitedDesc describes how a process that failed its handshake ended. go-plugin
// has already killed it if it was still running.
func (pr *proc) exitedDesc() string {
	pr.stop(false) // reap it so ProcessState is final
	if ps := pr.processState(); ps != nil {
		return "exited (" + ps.String() + ")"
	}
	return "exited"
}

func unwrapExec(err error) error {
	var execErr *exec.Error
	if errors.As(err, &execErr) {
		return execErr.Err
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
