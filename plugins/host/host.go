// Package host runs implementations as plugin processes and drives them over
// gRPC behind the ops.Impl interface.
//
// Open starts a plugin (any executable that serves the ipcfuzz protocol with
// plugins.Serve) and returns a *Plugin. Every call is bounded by a per-call
// deadline, and every way a plugin can misbehave comes back as a one-line
// *PluginError naming the plugin and saying what happened: it could not be
// started, failed the handshake, crashed, hung, or answered garbage. A plugin
// that crashed or hung is dead until Restart; Close leaves no process and no
// socket behind. (A host killed with SIGKILL leaves its plugins' socket
// directories; the next host removes them: see sockdir.go.)
//
// Plugin output never reaches the host's stdout: the plugin's log lines and
// stderr go to the Launch's logger (Warn and above by default, on stderr), its
// stdout after the handshake to the same logger at Debug.
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/plugins"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// DefaultCallTimeout is the per-call deadline when Launch.CallTimeout is 0.
const DefaultCallTimeout = time.Minute

// Launch says how to start a plugin.
type Launch struct {
	// Name is how messages call the plugin; the path when empty.
	Name string
	// Path is the executable. A name without a slash is looked up in PATH.
	Path string
	// Args are its arguments (without the program name).
	Args []string
	// Env holds "KEY=value" entries added to the host's environment.
	Env []string
	// CallTimeout bounds every call (and the launch): a plugin that does not
	// answer in time is Hung and gets killed. 0 means DefaultCallTimeout; a
	// negative value means no deadline beyond the caller's context.
	CallTimeout time.Duration
	// Logger receives the plugin's log lines and output, and go-plugin's own
	// messages. nil means Warn and above, on stderr.
	Logger hclog.Logger
	// Boot, when set, starts the plugin instead of executing Path (boot.go):
	// Path then only names it, Args and Env are unused, and CallTimeout is
	// multiplied by the slowdown the booted plugin reports.
	Boot BootFunc
	// ConnectTimeout bounds how long a booted plugin's first connection
	// may wait for the answer to its preface; 0: DefaultConnectTimeout
	// multiplied by the slowdown it reports.
	ConnectTimeout time.Duration
}

// Plugin is a running plugin process behind the ops.Impl interface. Its
// methods are safe for concurrent use (the plugin serializes them).
//
// Every call runs under the caller's context and Launch.CallTimeout. A call
// whose deadline passes (either one) is Hung: the process is killed. A call
// whose context is cancelled returns the context's error and leaves the
// plugin running. Errors from the plugin are *PluginError; a plugin that
// crashed or hung answers every call with that error until Restart.
//
// Plugins are go-plugin managed clients: besides Close, plugin.CleanupClients
// kills every one still running (for a host's signal or exit path). Each
// runs in a process group of its own, which stopping it kills too.
type Plugin struct {
	spec    Launch
	name    string
	timeout time.Duration // <= 0: none
	logger  hclog.Logger

	life sync.Mutex // serializes Restart, Kill and Close

	mu     sync.Mutex // guards the fields below and every proc.dead
	cur    *proc      // nil after Kill or a failed Restart
	dead   map[*proc]*PluginError
	closed bool
	// events are the launches that failed for infrastructure reasons and
	// were tried again, not yet taken (LaunchEvents).
	events []string

	// serverNanos adds up the time the plugin's exec calls took inside it,
	// as it reported (ServerNanos).
	serverNanos atomic.Int64
}

// ServerNanos is the time the plugin's exec calls (Exec, ExecPacked) took
// inside it so far, as it reported each (from the request's arrival in its
// handler to the response built); a plugin that does not report it adds 0.
// Against the host's time around the same calls it says what the
// transport took.
func (p *Plugin) ServerNanos() int64 { return p.serverNanos.Load() }

var _ ops.Impl = (*Plugin)(nil)

// Open starts the plugin described by spec and checks that it serves the
// ipcfuzz protocol. ctx bounds the launch only; the process lives until Close
// or Kill.
func Open(ctx context.Context, spec Launch) (*Plugin, error) {
	p := &Plugin{spec: spec, name: spec.Name, timeout: spec.CallTimeout, logger: spec.Logger, dead: map[*proc]*PluginError{}}
	if p.name == "" {
		p.name = spec.Path
	}
	if p.timeout == 0 {
		p.timeout = DefaultCallTimeout
	}
	if p.logger == nil {
		var dump panicDump
		p.logger = hclog.New(&hclog.LoggerOptions{
			Name:   "plugin",
			Level:  hclog.Warn,
			Output: &cappedLines{w: os.Stderr, left: relayedLines, what: p.name},
			Exclude: func(level hclog.Level, msg string, args ...any) bool {
				return reportedByHost(level, msg, args...) || dump.excludes(level, msg, args)
			},
		})
	}
	if spec.Path == "" && spec.Boot == nil {
		return nil, &PluginError{Plugin: p.name, Kind: Start, Err: errors.New("no executable path given")}
	}
	pr, err := p.launch(ctx)
	if err != nil {
		return nil, err
	}
	if pr.booted != nil {
		p.timeout = scaled(p.timeout, pr.booted.Slowdown())
	}
	p.cur = pr
	return p, nil
}

// reportedByHost drops go-plugin's messages about process exits and kills:
// the host reports those itself, once, as a PluginError.
func reportedByHost(_ hclog.Level, msg string, _ ...any) bool {
	switch msg {
	case "plugin process exited", "plugin failed to exit gracefully", "error closing client during Kill":
		return true
	}
	return false
}

// Name is the name the plugin's messages use.
func (p *Plugin) Name() string { return p.name }

// Pid is the process id of the running plugin, or 0 when none runs (killed,
// crashed, hung, closed).
func (p *Plugin) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cur == nil || p.dead[p.cur] != nil {
		return 0
	}
	return p.cur.pid
}

// Restart kills the current process, if any, and launches the same Launch
// again. It is how a Plugin comes back after Crashed or Hung (or Kill).
func (p *Plugin) Restart(ctx context.Context) error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("plugin %q: restart: %w", p.name, ErrClosed)
	}
	old := p.cur
	p.cur = nil
	p.mu.Unlock()
	p.forget(old)
	pr, err := p.launch(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cur = pr
	p.mu.Unlock()
	return nil
}

// Kill SIGKILLs the plugin process at once and waits until it is gone. Calls
// then fail with ErrNotRunning until Restart.
func (p *Plugin) Kill() {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	old := p.cur
	p.cur = nil
	p.mu.Unlock()
	p.forget(old)
}

// Close asks the plugin to shut down (killing it after 2 s), waits until the
// process is gone and removes its socket directory. It is idempotent and
// always returns nil; calls after Close fail with ErrClosed.
func (p *Plugin) Close() error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	old := p.cur
	p.cur = nil
	p.mu.Unlock()
	if old != nil {
		old.stop(true)
		p.mu.Lock()
		delete(p.dead, old)
		p.mu.Unlock()
	}
	return nil
}

// forget stops pr at once (nil is fine) and drops its death record.
func (p *Plugin) forget(pr *proc) {
	if pr == nil {
		return
	}
	pr.stop(false)
	p.mu.Lock()
	delete(p.dead, pr)
	p.mu.Unlock()
}

// current returns the process to call, or why there is none.
func (p *Plugin) current(method string) (*proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, fmt.Errorf("plugin %q: %s: %w", p.name, method, ErrClosed)
	case p.cur == nil:
		return nil, fmt.Errorf("plugin %q: %s: %w", p.name, method, ErrNotRunning)
	case p.dead[p.cur] != nil:
		return nil, p.dead[p.cur]
	}
	return p.cur, nil
}

func (p *Plugin) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout > 0 {
		return context.WithTimeout(ctx, p.timeout)
	}
	return context.WithCancel(ctx)
}

// call runs one RPC on the current process with the per-call deadline and
// turns a failed call into the right error.
func call[Resp any](ctx context.Context, p *Plugin, method string, rpc func(context.Context, ipcfuzzv1.ImplClient) (Resp, error)) (Resp, error) {
	var zero Resp
	pr, err := p.current(method)
	if err != nil {
		return zero, err
	}
	timed, cancel := p.callContext(ctx)
	defer cancel()
	callCtx, stopWatch := context.WithCancelCause(timed)
	defer stopWatch(nil)
	go watchStopped(callCtx, pr.pid, stopWatch)
	start := time.Now()
	resp, err := rpc(callCtx, pr.rpc)
	if err != nil {
		return zero, p.classify(ctx, callCtx, pr, method, time.Since(start), err)
	}
	return resp, nil
}

// classify turns the error of a failed RPC on pr into the host's error,
// killing the process when it is Hung or half-dead. took is how long the call
// ran.
func (p *Plugin) classify(ctx, callCtx context.Context, pr *proc, method string, took time.Duration, err error) error {
	if pr.stopping.Load() {
		// The host itself stopped the process (Kill, Restart, Close) while the
		// call was in flight.
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return fmt.Errorf("plugin %q: %s: %w", p.name, method, ErrClosed)
		}
		return fmt.Errorf("plugin %q: %s: %w", p.name, method, ErrNotRunning)
	}
	code := status.Code(err)
	timedOut := code == codes.DeadlineExceeded || errors.Is(callCtx.Err(), context.DeadlineExceeded)
	switch {
	case ctx.Err() != nil:
		// The caller gave up or its own deadline passed (a run's --time):
		// the plugin is not to blame and stays up. Only the host's
		// per-call deadline makes a plugin hung.
		return fmt.Errorf("plugin %q: %s: %w", p.name, method, ctx.Err())

	case errors.Is(context.Cause(callCtx), errStopped):
		return p.bury(pr, &PluginError{Plugin: p.name, Kind: Hung, Stderr: pr.stderr.text(),
			Err: fmt.Errorf("%s: no answer within %v: %w; process killed", method, took.Round(time.Millisecond), errStopped)})

	case timedOut && callerDeadlineBinds(ctx, callCtx):
		// gRPC's own timer (or the server's, from the grpc-timeout header)
		// can fire a moment before ctx's: the deadline that ran out is
		// still the caller's, not the host's per-call one. Wait the moment
		// out so that the caller sees its own context ended too.
		<-ctx.Done()
		return fmt.Errorf("plugin %q: %s: %w", p.name, method, ctx.Err())

	case timedOut:
		within := fmt.Sprintf(" within %v", took.Round(time.Millisecond))
		if p.timeout > 0 {
			within += fmt.Sprintf(" (call timeout %v)", p.timeout)
		}
		return p.bury(pr, &PluginError{Plugin: p.name, Kind: Hung, Stderr: pr.stderr.text(),
			Err: fmt.Errorf("%s: no answer%s; process killed: %w", method, within, context.DeadlineExceeded)})

	case code == codes.Unavailable || code == codes.Canceled || pr.client.Exited():
		how := pr.exited(exitGrace)
		if how == "" {
			how = fmt.Sprintf("lost its connection (%s); process killed", status.Convert(err).Message())
		} else {
			how = "exited (" + how + ")"
		}
		return p.bury(pr, &PluginError{Plugin: p.name, Kind: Crashed, Stderr: pr.stderr.text(),
			Err: fmt.Errorf("%s: process %s%s", method, how, quoteStderr(pr.stderr.crashLine()))})

	case code == codes.Unimplemented:
		return &PluginError{Plugin: p.name, Kind: Garbage,
			Err: fmt.Errorf("%s: the plugin does not implement it (protocol mismatch): %w", method, err)}
	}
	return &PluginError{Plugin: p.name, Kind: Garbage, Err: fmt.Errorf("%s: %w", method, err)}
}

// callerDeadlineBinds reports whether the caller's deadline is the one that
// bounds callCtx (no later than the host's per-call deadline) and is at most
// deadlineSlack away.
func callerDeadlineBinds(ctx, callCtx context.Context) bool {
	mine, ok := ctx.Deadline()
	if !ok {
		return false
	}
	if time.Until(mine) > deadlineSlack {
		return false
	}
	call, ok := callCtx.Deadline()
	return !ok || !mine.After(call)
}

// deadlineSlack is how early gRPC may report a deadline before the caller's
// context notices it (timers, the server's copy of the deadline).
const deadlineSlack = 100 * time.Millisecond

// bury records pe as the death of pr and kills the process; it returns pe.
func (p *Plugin) bury(pr *proc, pe *PluginError) error {
	p.mu.Lock()
	if prev := p.dead[pr]; prev != nil {
		pe = prev
	} else {
		p.dead[pr] = pe
	}
	p.mu.Unlock()
	pr.stop(false)
	return pe
}

// garbage reports an answer that does not fit its request.
func (p *Plugin) garbage(method string, err error) error {
	return &PluginError{Plugin: p.name, Kind: Garbage, Err: fmt.Errorf("%s: %w", method, err)}
}

// failed reports an error the implementation returned.
func (p *Plugin) failed(method string, f *ipcfuzzv1.Failure) error {
	return &PluginError{Plugin: p.name, Kind: Failed, Err: fmt.Errorf("%s: %s", method, f.GetMessage())}
}

// Info implements ops.Impl.
func (p *Plugin) Info(ctx context.Context) (ops.Info, error) {
	resp, err := call(ctx, p, "info", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.InfoResponse, error) {
		return c.Info(ctx, &ipcfuzzv1.InfoRequest{})
	})
	if err != nil {
		return ops.Info{}, err
	}
	if resp.Failure != nil {
		return ops.Info{}, p.failed("info", resp.Failure)
	}
	info, err := plugins.InfoFromProto(resp.Info)
	if err != nil {
		return ops.Info{}, p.garbage("info", err)
	}
	return info, nil
}

// checkConfig refuses options the wire cannot carry (proto3 strings are
// UTF-8), so that a failure to encode is never blamed on the plugin.
func (p *Plugin) checkConfig(method string, cfg ops.Config) error {
	for k, v := range cfg.Options {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("plugin %q: %s: option %q=%q is not valid UTF-8", p.name, method, k, v)
		}
	}
	return nil
}

// Reset implements ops.Impl.
func (p *Plugin) Reset(ctx context.Context, cfg ops.Config) error {
	if err := p.checkConfig("reset", cfg); err != nil {
		return err
	}
	req := &ipcfuzzv1.ResetRequest{Config: plugins.ConfigToProto(cfg)}
	resp, err := call(ctx, p, "reset", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.ResetResponse, error) {
		return c.Reset(ctx, req)
	})
	if err != nil {
		return err
	}
	if resp.Failure != nil {
		return p.failed("reset", resp.Failure)
	}
	return nil
}

// Apply implements ops.Impl. With a Failed error it also returns the results
// of the operations before the failing one. follow, when not nil, travels
// with the operations; a plugin that does not say it followed them (one
// that predates following in Apply) answers garbage.
func (p *Plugin) Apply(ctx context.Context, batch []ops.Op, follow []ops.Result) ([]ops.Result, error) {
	req := &ipcfuzzv1.ApplyRequest{Ops: plugins.PackOps(batch)}
	if follow != nil {
		req.Follow, req.FollowSet = plugins.PackResults(follow), true
	}
	resp, err := call(ctx, p, "apply", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.ApplyResponse, error) {
		return c.Apply(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	if req.FollowSet && !resp.Followed && resp.Failure == nil {
		return nil, p.garbage("apply", errors.New("the plugin did not follow the results it was given (it predates following in apply)"))
	}
	results, err := plugins.UnpackResults(resp.Results)
	if err != nil {
		return nil, p.garbage("apply", err)
	}
	switch {
	case resp.Failure != nil && len(results) > len(batch):
		return nil, p.garbage("apply", fmt.Errorf("%d results for %d operations", len(results), len(batch)))
	case resp.Failure != nil:
		return results, p.failed("apply", resp.Failure)
	case len(results) != len(batch):
		return nil, p.garbage("apply", fmt.Errorf("%d results for %d operations", len(results), len(batch)))
	}
	return results, nil
}

// Snapshot implements ops.Impl: follow, when not nil, travels with the
// request.
func (p *Plugin) Snapshot(ctx context.Context, follow *ops.Snapshot) (ops.Snapshot, error) {
	req := &ipcfuzzv1.SnapshotRequest{}
	if follow != nil {
		req.Follow, req.FollowSet = plugins.PackSnapshot(*follow), true
	}
	resp, err := call(ctx, p, "snapshot", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.SnapshotResponse, error) {
		return c.Snapshot(ctx, req)
	})
	if err != nil {
		return ops.Snapshot{}, err
	}
	if req.FollowSet && !resp.Followed && resp.Failure == nil {
		return ops.Snapshot{}, p.garbage("snapshot", errors.New("the plugin did not follow the snapshot it was given (it predates following in snapshot)"))
	}
	if resp.Failure != nil {
		return ops.Snapshot{}, p.failed("snapshot", resp.Failure)
	}
	snap, err := plugins.UnpackSnapshot(resp.Snapshot)
	if err != nil {
		return ops.Snapshot{}, p.garbage("snapshot", err)
	}
	return snap, nil
}

// Exec implements ops.Impl. With a Failed error it also returns the outcomes
// of the scripts before the failing one.
func (p *Plugin) Exec(ctx context.Context, cfg ops.Config, scripts [][]ops.Op, others []ops.Outcome) ([]ops.Outcome, error) {
	lens := make([]int, len(scripts))
	for i, s := range scripts {
		lens[i] = len(s)
	}
	wire, err := p.exec(ctx, cfg, p.PackScripts(scripts), lens, others)
	if wire == nil {
		return nil, err
	}
	outcomes := make([]ops.Outcome, len(wire))
	for i, w := range wire {
		o, derr := p.Decode(w, i, lens[i])
		if derr != nil {
			return nil, derr
		}
		outcomes[i] = o
	}
	return outcomes, err
}

// Layout implements ops.Wire: every plugin the host accepts speaks this
// process's packed layout (the handshake checks it).
func (p *Plugin) Layout() string { return plugins.LayoutVersion() }

// PackScripts implements ops.Wire.
func (p *Plugin) PackScripts(scripts [][]ops.Op) [][]byte { return plugins.ScriptsToProto(scripts) }

// ExecPacked implements ops.Wire.
func (p *Plugin) ExecPacked(ctx context.Context, cfg ops.Config, packed [][]byte, lens []int) ([]ops.WireOutcome, error) {
	return p.exec(ctx, cfg, packed, lens, nil)
}

// exec runs packed scripts of lengths lens and returns each outcome's bytes
// undecoded: all of them, or with a Failed error those before the failing
// script. Any other error comes with no outcomes.
func (p *Plugin) exec(ctx context.Context, cfg ops.Config, packed [][]byte, lens []int, others []ops.Outcome) ([]ops.WireOutcome, error) {
	if err := p.checkConfig("exec", cfg); err != nil {
		return nil, err
	}
	req := &ipcfuzzv1.ExecRequest{Config: plugins.ConfigToProto(cfg), Scripts: packed}
	if others != nil {
		req.Follow = plugins.OutcomesToProto(withoutObserved(others))
		req.FollowSet = true
	}
	resp, err := call(ctx, p, "exec", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.ExecResponse, error) {
		return c.Exec(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	p.serverNanos.Add(max(resp.GetServerNs(), 0))
	if n := len(resp.Outcomes); n > len(lens) || (resp.Failure == nil && n != len(lens)) {
		return nil, p.garbage("exec", fmt.Errorf("%d outcomes for %d scripts", n, len(lens)))
	}
	wire := make([]ops.WireOutcome, len(resp.Outcomes))
	for i, o := range resp.Outcomes {
		wire[i] = ops.WireOutcome{Results: o.GetResults(), Snapshot: o.GetSnapshot(), Observed: o.GetObserved()}
	}
	if resp.Failure != nil {
		return wire, p.failed("exec", resp.Failure)
	}
	return wire, nil
}

// Decode implements ops.Wire: bytes that do not decode, or results that do
// not match the script's n operations, are garbage.
func (p *Plugin) Decode(w ops.WireOutcome, script, n int) (ops.Outcome, error) {
	rs, err := plugins.UnpackResults(w.Results)
	if err == nil {
		var snap ops.Snapshot
		if snap, err = plugins.UnpackSnapshot(w.Snapshot); err == nil {
			if len(rs) != n {
				return ops.Outcome{}, p.garbage("exec", fmt.Errorf("script %d: %d results for %d operations", script+1, len(rs), n))
			}
			obs, err := p.DecodeObserved(w, script, n)
			return ops.Outcome{Results: rs, Snapshot: snap, Observed: obs}, err
		}
	}
	return ops.Outcome{}, p.garbage("exec", fmt.Errorf("outcome %d: %w", script+1, err))
}

// DecodeObserved implements ops.Wire: observations that do not decode, or
// that are not one per operation, are garbage; none at all are nil.
func (p *Plugin) DecodeObserved(w ops.WireOutcome, script, n int) ([]ops.Observation, error) {
	obs, err := plugins.UnpackObserved(w.Observed)
	switch {
	case err != nil:
		return nil, p.garbage("exec", fmt.Errorf("outcome %d: %w", script+1, err))
	case obs != nil && len(obs) != n:
		return nil, p.garbage("exec", fmt.Errorf("script %d: %d observations for %d operations", script+1, len(obs), n))
	}
	return obs, nil
}

// withoutObserved is outcomes to follow as they travel: a follower needs
// the other side's results and snapshot, never its observations.
func withoutObserved(outs []ops.Outcome) []ops.Outcome {
	stripped := make([]ops.Outcome, len(outs))
	for i, o := range outs {
		stripped[i] = ops.Outcome{Results: o.Results, Snapshot: o.Snapshot}
	}
	return stripped
}

// Measure implements ops.Impl.
func (p *Plugin) Measure(ctx context.Context, cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	if err := p.checkConfig("measure", cfg); err != nil {
		return ops.Measurement{}, err
	}
	req := &ipcfuzzv1.MeasureRequest{Config: plugins.ConfigToProto(cfg), Workload: string(w), N: int64(n), Reps: int32(reps)}
	resp, err := call(ctx, p, "measure", func(ctx context.Context, c ipcfuzzv1.ImplClient) (*ipcfuzzv1.MeasureResponse, error) {
		return c.Measure(ctx, req)
	})
	if err != nil {
		return ops.Measurement{}, err
	}
	if resp.Failure != nil {
		return ops.Measurement{}, p.failed("measure", resp.Failure)
	}
	if resp.Failure == nil && len(resp.WallNs) != reps {
		return ops.Measurement{}, p.garbage("measure", fmt.Errorf("%d timings for %d repetitions", len(resp.WallNs), reps))
	}
	return ops.Measurement{WallNs: resp.WallNs, Counters: resp.Counters, Primary: resp.Primary}, nil
}
