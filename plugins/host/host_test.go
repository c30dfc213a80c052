package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// syncBuffer is a log sink the plugin's goroutines and the test share.
type syncBuffer = testkit.SyncBuffer

// launch describes the test binary serving mode. Its log goes to a buffer
// that is shown only if the test fails.
func launch(t testing.TB, mode string, env ...string) Launch {
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() && logs.String() != "" {
			t.Logf("plugin log:\n%s", logs)
		}
	})
	return Launch{
		Name:        mode,
		Path:        os.Args[0],
		Env:         append([]string{modeEnv + "=" + mode}, env...),
		CallTimeout: 20 * time.Second,
		Logger:      hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug, Output: logs, Exclude: reportedByHost}),
	}
}

func open(t testing.TB, spec Launch) *Plugin {
	t.Helper()
	p, err := Open(context.Background(), spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// gone reports whether no process (not even a zombie) has pid.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func kindOf(err error) ErrKind {
	var pe *PluginError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return 0
}

// toyScript draws a script the toy model understands: gets binding handles,
// and rmid/stat/list/limit on them (or on literal ids), over all three types.
func toyScript(r *rand.Rand, n int) []ops.Op {
	s := make([]ops.Op, 0, n)
	bound := 0
	ref := func() ops.Ref {
		if bound > 0 && r.IntN(4) > 0 {
			return ops.Ref{Handle: 1 + r.IntN(bound)}
		}
		return ops.Ref{ID: r.Int64N(8)}
	}
	for range n {
		t := ops.IPCType(r.IntN(len(ops.IPCTypes)))
		switch r.IntN(7) {
		case 0, 1, 2:
			bound++
			s = append(s, ops.Op{Kind: ops.KindGet, Type: t, Bind: bound, Key: r.Int32() - 1<<30, Creat: true,
				Mode: uint16(r.IntN(0o1000)), Size: r.Int64N(1 << 20), As: uint32(r.IntN(3))})
		case 3:
			s = append(s, ops.Op{Kind: ops.KindRmid, Type: t, Obj: ref()})
		case 4:
			s = append(s, ops.Op{Kind: ops.KindStat, Type: t, Obj: ref()})
		case 5:
			s = append(s, ops.Op{Kind: ops.KindList, Type: t})
		case 6:
			s = append(s, ops.Op{Kind: ops.KindLimit, Type: t, Value: r.Int64N(6)})
		}
	}
	return s
}

func toyScripts(seed uint64, scripts, n int) [][]ops.Op {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]ops.Op, scripts)
	for i := range out {
		out[i] = toyScript(r, n)
	}
	return out
}

// requireSameOutcomes compares outcomes in their packed form, where nil and
// empty lists are one thing.
func requireSameOutcomes(t *testing.T, want, got []ops.Outcome) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, plugins.PackResults(want[i].Results), plugins.PackResults(got[i].Results), "script %d", i)
		require.Equal(t, plugins.PackSnapshot(want[i].Snapshot), plugins.PackSnapshot(got[i].Snapshot), "script %d", i)
	}
}

func TestPluginMatchesLocal(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	local := newToy()
	require.NotZero(t, p.Pid())

	pi, err := p.Info(ctx)
	require.NoError(t, err)
	li, _ := local.Info(ctx)
	require.Equal(t, li, pi)

	cfgs := []ops.Config{{}, {Options: map[string]string{}}, {Options: map[string]string{"start": "100"}}}
	for i, cfg := range cfgs {
		scripts := toyScripts(uint64(i), 40, 1+i*20)
		scripts = append(scripts, nil, []ops.Op{})
		want, err := local.Exec(ctx, cfg, scripts, nil)
		require.NoError(t, err)
		got, err := p.Exec(ctx, cfg, scripts, nil)
		require.NoError(t, err)
		requireSameOutcomes(t, want, got)

		require.NoError(t, local.Reset(ctx, cfg))
		require.NoError(t, p.Reset(ctx, cfg))
		for _, batch := range scripts[:10] { // handles persist across batches
			want, err := local.Apply(ctx, batch, nil)
			require.NoError(t, err)
			got, err := p.Apply(ctx, batch, nil)
			require.NoError(t, err)
			require.Equal(t, plugins.PackResults(want), plugins.PackResults(got))
		}
		ws, _ := local.Snapshot(ctx, nil)
		gs, err := p.Snapshot(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, plugins.PackSnapshot(ws), plugins.PackSnapshot(gs))
	}

	// An option the model refuses comes back as Failed, and the plugin lives on.
	err = p.Reset(ctx, ops.Config{Options: map[string]string{"alloc": "legacy"}})
	require.Equal(t, Failed, kindOf(err), "%v", err)
	require.Contains(t, err.Error(), `toy: unknown option "alloc"`)
	_, err = p.Info(ctx)
	require.NoError(t, err)
}

func TestCrashThenRestart(t *testing.T) {
	for _, mode := range []string{"crash", "panic"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			p := open(t, launch(t, mode, crashAtEnv+"=2"))
			pid := p.Pid()
			batch := toyScripts(1, 1, 10)[0]
			require.NoError(t, p.Reset(ctx, ops.Config{}))
			_, err := p.Apply(ctx, batch, nil)
			require.NoError(t, err)

			_, err = p.Apply(ctx, batch, nil)
			require.Error(t, err)
			t.Logf("error: %v", err)
			require.Equal(t, Crashed, kindOf(err))
			require.True(t, IsKind(err, Crashed))
			require.NotContains(t, err.Error(), "\n")
			require.True(t, strings.HasPrefix(err.Error(), `plugin "`+mode+`": crashed: apply: process exited`), err.Error())
			if mode == "crash" {
				require.Contains(t, err.Error(), "exit status 3")
				// What it wrote to stderr after the handshake is kept for
				// its report, and its last line is quoted.
				var pe *PluginError
				require.ErrorAs(t, err, &pe)
				require.Contains(t, pe.Stderr, "toy: giving up on apply 2")
				require.Contains(t, err.Error(), "toy: giving up on apply 2")
			} else {
				require.Contains(t, err.Error(), `panic: toy: boom on apply 2`)
			}
			require.True(t, gone(pid), "pid %d still exists", pid)
			require.Zero(t, p.Pid())

			// Dead until restarted: every call says why.
			_, err2 := p.Snapshot(ctx, nil)
			require.Equal(t, err, err2)

			require.NoError(t, p.Restart(ctx))
			require.NotZero(t, p.Pid())
			require.NotEqual(t, pid, p.Pid())
			require.NoError(t, p.Reset(ctx, ops.Config{}))
			got, err := p.Apply(ctx, batch, nil) // apply 1 of the new process
			require.NoError(t, err)
			require.Len(t, got, len(batch))
		})
	}
}

func TestHungPluginIsKilled(t *testing.T) {
	ctx := context.Background()
	spec := launch(t, "hang")
	spec.CallTimeout = 300 * time.Millisecond
	p := open(t, spec)
	pid := p.Pid()
	sockDir := p.cur.sockDir
	require.DirExists(t, sockDir)

	start := time.Now()
	_, err := p.Apply(ctx, toyScripts(1, 1, 5)[0], nil)
	took := time.Since(start)
	require.Error(t, err)
	t.Logf("error after %v: %v", took, err)
	require.Equal(t, Hung, kindOf(err))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotContains(t, err.Error(), "\n")
	require.GreaterOrEqual(t, took, spec.CallTimeout)
	// The plugin hangs for good: any bound shows the call was cut, and a
	// loaded machine may take seconds to deliver the kill.
	require.Less(t, took, spec.CallTimeout+30*time.Second)
	require.True(t, gone(pid), "hung plugin pid %d still exists", pid)
	require.NoDirExists(t, sockDir)

	require.NoError(t, p.Restart(ctx))
	_, err = p.Info(ctx) // Info does not hang in this mode
	require.NoError(t, err)
}

func TestCallerCancelLeavesPluginUp(t *testing.T) {
	p := open(t, launch(t, "toy"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Snapshot(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, kindOf(err))
	_, err = p.Snapshot(context.Background(), nil)
	require.NoError(t, err)
}

// The caller's own deadline passing (a run's --time running out) is not a
// hung plugin: the call fails with the deadline, the plugin stays up and
// answers the next call.
func TestCallerDeadlineLeavesPluginUp(t *testing.T) {
	spec := launch(t, "hang")
	spec.CallTimeout = time.Minute
	p := open(t, spec)
	pid := p.Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Apply(ctx, toyScripts(1, 1, 5)[0], nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, kindOf(err), "not a plugin failure: %v", err)
	require.False(t, gone(pid), "the plugin was killed")
	_, err = p.Info(context.Background())
	require.NoError(t, err)
}

// A request the host cannot encode is the host's problem, not the plugin's.
func TestUnencodableRequest(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	err := p.Reset(ctx, ops.Config{Options: map[string]string{"start": "\xff"}})
	require.Error(t, err)
	t.Logf("error: %v", err)
	require.Zero(t, kindOf(err))
	require.Contains(t, err.Error(), "is not valid UTF-8")
	require.NoError(t, p.Reset(ctx, ops.Config{}))
}

func TestHandshakeFailures(t *testing.T) {
	cases := map[string]string{
		"not-a-plugin": `its first line on stdout was "hello, I am an ordinary program"`,
		"noise":        `its first line on stdout was "starting toy model..."`,
		"exit-early":   "exited (exit status 0) before the handshake",
		"other-cookie": `exited (exit status 1) before the handshake; stderr: "This binary is a plugin.`,
		"future":       fmt.Sprintf("plugin speaks ipcfuzz protocol version %d, this host speaks %d", plugins.ProtocolVersion+1, plugins.ProtocolVersion),
		"other-layout": `it speaks packed layout "packed-000000000000", this host`,
	}
	for mode, want := range cases {
		t.Run(mode, func(t *testing.T) {
			_, err := Open(context.Background(), launch(t, mode))
			require.Error(t, err)
			t.Logf("error: %v", err)
			require.Equal(t, Handshake, kindOf(err))
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, `plugin "`+mode+`": handshake failed: `), msg)
			require.Contains(t, msg, want)
			require.NotContains(t, msg, "\n")
			require.NotContains(t, msg, "architecture")
		})
	}
}

func TestStartFailures(t *testing.T) {
	notExec := t.TempDir() + "/plain-file"
	require.NoError(t, os.WriteFile(notExec, []byte("not a program"), 0o644))
	cases := map[string]string{
		"/nonexistent/ipcfuzz-plugin": "no such file or directory",
		notExec:                       "permission denied",
		"no-such-plugin-in-path":      "executable file not found",
	}
	for path, want := range cases {
		_, err := Open(context.Background(), Launch{Path: path})
		require.Error(t, err)
		t.Logf("error: %v", err)
		require.Equal(t, Start, kindOf(err))
		require.True(t, strings.HasPrefix(err.Error(), `plugin "`+path+`": cannot start: `+path+`: `), err.Error())
		require.Contains(t, err.Error(), want)
	}
}

func TestGarbageAnswers(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "short"))
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	_, err := p.Apply(ctx, toyScripts(1, 1, 7)[0], nil)
	t.Logf("error: %v", err)
	require.Equal(t, Garbage, kindOf(err))
	require.Contains(t, err.Error(), "6 results for 7 operations")
	require.NotZero(t, p.Pid(), "a plugin that sent garbage is still running")
	_, err = p.Info(ctx)
	require.NoError(t, err)

	p = open(t, launch(t, "badsnap"))
	_, err = p.Snapshot(ctx, nil)
	t.Logf("error: %v", err)
	require.Equal(t, Garbage, kindOf(err))
	require.Contains(t, err.Error(), "packed snapshot")
}

func TestImplementationFailure(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "failing"))
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	batch := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Key: 5, Creat: true, Mode: 0o600},
		{Kind: ops.KindNextID, Type: ops.Msg, Value: 7},
		{Kind: ops.KindList, Type: ops.Msg},
	}
	rs, err := p.Apply(ctx, batch, nil)
	t.Logf("error: %v", err)
	require.Equal(t, Failed, kindOf(err))
	require.Contains(t, err.Error(), "toy: next_id is not implemented")
	require.Equal(t, []ops.Result{{ID: 0}}, rs, "results before the failure come back")

	outs, err := p.Exec(ctx, ops.Config{}, [][]ops.Op{batch[:1], batch}, nil)
	require.Equal(t, Failed, kindOf(err))
	require.Contains(t, err.Error(), "script 2 of 2")
	require.Len(t, outs, 1)
	_, err = p.Snapshot(ctx, nil)
	require.NoError(t, err)
}

// An Exec whose request and answer are each larger than gRPC's default
// message limit (4 MiB) goes through, and gives the local run's outcome.
func TestLargeExec(t *testing.T) {
	t.Parallel()    // seconds of waiting (or, for the large exec, of CPU) beside the others'
	testkit.Long(t) // 300k operations each way: seconds of CPU
	if testing.Short() {
		t.Skip("large")
	}
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	const n = 300_000 // about 5 MB of operations, 6 MB of results and snapshot
	script := make([]ops.Op, 0, n)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range n {
		script = append(script, ops.Op{Kind: ops.KindGet, Type: ops.IPCType(i % 3), Key: r.Int32(), Creat: true,
			Mode: 0o640, Size: r.Int64N(1 << 30), As: uint32(i % 5)})
	}
	start := time.Now()
	got, err := p.Exec(ctx, ops.Config{}, [][]ops.Op{script}, nil)
	require.NoError(t, err)
	t.Logf("exec of %d ops through the plugin: %v", n, time.Since(start))
	want, err := newToy().Exec(ctx, ops.Config{}, [][]ops.Op{script}, nil)
	require.NoError(t, err)
	const grpcDefault = 4 << 20
	require.Greater(t, len(plugins.PackOps(script)), grpcDefault, "the request fits gRPC's default limit: the test proves nothing")
	require.Greater(t, len(plugins.PackResults(want[0].Results))+len(plugins.PackSnapshot(want[0].Snapshot)), grpcDefault,
		"the answer fits gRPC's default limit: the test proves nothing")
	if !reflect.DeepEqual(plugins.PackResults(want[0].Results), plugins.PackResults(got[0].Results)) {
		t.Fatalf("large exec differs from the local run")
	}
	require.Len(t, got[0].Snapshot.IDs[0].Objects, (n+2)/3) // the gets of type 0: i%3 == 0
}

func TestCloseLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	pid, sockDir := p.Pid(), p.cur.sockDir
	entries, err := os.ReadDir(sockDir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the plugin's socket lives in the private directory")

	require.NoError(t, p.Close())
	require.True(t, gone(pid), "pid %d still exists after Close", pid)
	require.NoDirExists(t, sockDir)
	require.NoError(t, p.Close(), "Close is idempotent")
	_, err = p.Info(ctx)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, p.Restart(ctx), ErrClosed)
	require.Zero(t, p.Pid())
}

// Stopping a plugin also stops what it spawned, even a child that holds the
// plugin's stdout and stderr (which would otherwise keep go-plugin waiting).
func TestStopTakesDescendants(t *testing.T) {
	for _, how := range []string{"close", "kill", "crash"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			p := open(t, launch(t, "spawner"))
			info, err := p.Info(ctx)
			require.NoError(t, err)
			child, err := strconv.Atoi(info.Version)
			require.NoError(t, err)
			pid := p.Pid()
			require.False(t, goneOrZombie(child))

			start := time.Now()
			switch how {
			case "close":
				require.NoError(t, p.Close())
			case "kill":
				p.Kill()
			case "crash":
				require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
				_, err := p.Snapshot(ctx, nil)
				t.Logf("error: %v", err)
				require.Equal(t, Crashed, kindOf(err))
				require.Contains(t, err.Error(), "signal: killed")
			}
			t.Logf("%s took %v", how, time.Since(start))
			// A stop that waited for the descendants would never end; the
			// slack is for a loaded machine.
			require.Less(t, time.Since(start), 20*time.Second)
			require.True(t, gone(pid))
			require.Eventually(t, func() bool { return goneOrZombie(child) }, 5*time.Second, 10*time.Millisecond,
				"child %d of the plugin survived", child)
		})
	}
}

// goneOrZombie is gone for a grandchild, which init reaps at its own pace.
func goneOrZombie(pid int) bool { return gone(pid) || isZombie(pid) }

// Calls racing with Restart, Kill and Close either succeed or say the plugin
// is not running; none is blamed on the plugin.
func TestConcurrentCallsAndLifecycle(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	scripts := toyScripts(3, 8, 30)
	var wg sync.WaitGroup
	var mu sync.Mutex
	oks, stops := 0, 0
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := p.Exec(ctx, ops.Config{}, scripts, nil)
				mu.Lock()
				switch {
				case err == nil:
					oks++
				case errors.Is(err, ErrNotRunning) || errors.Is(err, ErrClosed):
					stops++
				default:
					t.Errorf("unexpected error: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, p.Restart(ctx))
		time.Sleep(20 * time.Millisecond)
		p.Kill()
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, p.Restart(ctx))
	}
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, p.Close())
	close(stop)
	wg.Wait()
	t.Logf("%d calls succeeded, %d found the plugin stopped", oks, stops)
	require.Positive(t, oks)
}

func TestKillThenRestart(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	pid, sockDir := p.Pid(), p.cur.sockDir
	p.Kill()
	require.True(t, gone(pid))
	require.NoDirExists(t, sockDir)
	_, err := p.Info(ctx)
	require.ErrorIs(t, err, ErrNotRunning)
	p.Kill() // idempotent
	require.NoError(t, p.Restart(ctx))
	_, err = p.Info(ctx)
	require.NoError(t, err)
}

func TestKilledFromOutside(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "toy"))
	pid := p.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	_, err := p.Snapshot(ctx, nil)
	t.Logf("error: %v", err)
	require.Equal(t, Crashed, kindOf(err))
	require.Contains(t, err.Error(), "signal: killed")
	require.NoError(t, p.Restart(ctx))
	_, err = p.Snapshot(ctx, nil)
	require.NoError(t, err)
}

// The plugin's stdout and stderr after the handshake go to the host's logger,
// never to the host's stdout.
func TestPluginOutputStaysOffStdout(t *testing.T) {
	ctx := context.Background()
	spec := launch(t, "chatty")
	logs := &syncBuffer{}
	spec.Logger = hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug, Output: logs})

	r, w, err := os.Pipe()
	require.NoError(t, err)
	realStdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = realStdout }()

	p := open(t, spec)
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	_, err = p.Apply(ctx, toyScripts(1, 1, 3)[0], nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "chatty: applying 3 ops") && strings.Contains(logs.String(), "chatty: stderr says hello")
	}, 5*time.Second, 10*time.Millisecond, "plugin output reaches the logger:\n%s", logs)
	require.NoError(t, p.Close())

	os.Stdout = realStdout
	require.NoError(t, w.Close())
	leaked, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Empty(t, string(leaked), "nothing reaches the host's stdout")
}

func TestErrorIsOneLine(t *testing.T) {
	e := &PluginError{Plugin: "./foo", Kind: Handshake, Err: errors.New("line one\n  line two\n\n")}
	require.Equal(t, `plugin "./foo": handshake failed: line one; line two`, e.Error())
}

// A script applied in batches follows over the wire: the other side's
// results travel with each batch and its snapshot with Snapshot, and a
// plugin that follows takes them; without them it answers on its own.
func TestApplyFollowCarriesTheOtherSide(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "follower"))
	batch := toyScripts(3, 1, 6)[0]
	other := make([]ops.Result, len(batch))
	for i := range other {
		other[i] = ops.Result{ID: int64(100 + i), List: []ops.Entry{{ID: int64(i), Key: 7}}}
	}
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	got, err := p.Apply(ctx, batch, other)
	require.NoError(t, err)
	require.Equal(t, other, got)
	var snap ops.Snapshot
	snap.IDs[ops.Sem].NextID = 42
	gotSnap, err := p.Snapshot(ctx, &snap)
	require.NoError(t, err)
	require.Equal(t, int64(42), gotSnap.IDs[ops.Sem].NextID)

	// The same operations, not following, are the toy's own.
	local := ops.NewLocal(toyInfo, &follower{})
	require.NoError(t, local.Reset(ctx, ops.Config{}))
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	want, err := local.Apply(ctx, batch, nil)
	require.NoError(t, err)
	got, err = p.Apply(ctx, batch, nil)
	require.NoError(t, err)
	requireSameOutcomes(t, []ops.Outcome{{Results: want}}, []ops.Outcome{{Results: got}})
}

// A plugin that does not say it followed is refused, not believed.
func TestUnfollowingPluginIsRefused(t *testing.T) {
	ctx := context.Background()
	p := open(t, launch(t, "unfollowing"))
	batch := toyScripts(3, 1, 4)[0]
	require.NoError(t, p.Reset(ctx, ops.Config{}))
	_, err := p.Apply(ctx, batch, make([]ops.Result, len(batch)))
	require.Equal(t, Garbage, kindOf(err), "%v", err)
	require.ErrorContains(t, err, "did not follow")
	_, err = p.Snapshot(ctx, &ops.Snapshot{})
	require.Equal(t, Garbage, kindOf(err), "%v", err)
	// Plain calls are fine.
	_, err = p.Apply(ctx, batch, nil)
	require.NoError(t, err)
	_, err = p.Snapshot(ctx, nil)
	require.NoError(t, err)
}
