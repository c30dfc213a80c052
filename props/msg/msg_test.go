package msg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/msg"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var sub = msg.Subsystem

// The checks every subsystem has (sidestest.Suite); the state machines
// are TestNaiveOptimized and TestOptimizedKernel (a replay each).
func TestSuite(t *testing.T) {
	sidestest.Suite{Sub: sub, RoundTrip: optimized.New, Machines: []sidestest.Compared{}, Commands: sidestest.Models()[:1], Seed: 7, MaxSize: 30}.Run(t)
}

// check replays one script on the pair (the follower after the other) and
// fails on any divergence.
func check(t interface{ Fatalf(string, ...any) }, p *runner.Pair, script []ops.Op) {
	if err := p.ReplayScript(context.Background(), ops.NewScript("msg", script)); err != nil {
		if re, ok := err.(*runner.ReplayError); ok {
			t.Fatalf("%s vs %s: %s\n%s", p.A.Name, p.B.Name, re.Error(), re.Table)
		}
		t.Fatalf("%s vs %s: %v", p.A.Name, p.B.Name, err)
	}
}

func TestNaiveOptimized(t *testing.T) {
	p := sidestest.Pair(t, sub, "naive", "optimized", equiv.Exact)
	rapid.Check(t, func(t *rapid.T) { check(t, p, sub.Draw(engine.NewRapidSource(t), equiv.Exact)) })
}

func TestOptimizedKernel(t *testing.T) {
	p := sidestest.Pair(t, sub, "optimized", "kernel", equiv.Exact)
	rapid.Check(t, func(t *rapid.T) { check(t, p, sub.Draw(engine.NewRapidSource(t), equiv.Exact)) })
}

// The generator must make what it is for: tasks that block and are later
// completed, and woken senders that race.
func TestGeneratorMakesBlockingAndRaces(t *testing.T) {
	a := sidestest.Open(t, "optimized", sub)
	gen := sub.RapidScripts(equiv.Exact)
	blocked, races := 0, 0
	const n = 300
	for seed := range uint64(n) {
		script := gen(seed)
		outs, err := a.Impl.Exec(context.Background(), ops.Config{}, [][]ops.Op{script}, nil)
		require.NoError(t, err)
		st := runner.ScriptStats(script, outs[0].Results)
		if st.BlockedThenCompleted {
			blocked++
		}
		if st.Race {
			races++
		}
	}
	t.Logf("%d of %d scripts had a task blocked then completed, %d a race", blocked, n, races)
	require.GreaterOrEqual(t, blocked*100/n, 30)
	require.GreaterOrEqual(t, races*100/n, 5)
}

// FuzzMsg turns the fuzzer's bytes into a script (one byte a choice) and
// compares the implementations IPCFUZZ_IMPLS names (naive, optimized and,
// where it can run, the live kernel by default) each with the next.
func FuzzMsg(f *testing.F) {
	sub.Fuzz(f, sidestest.FromEnv(f, sub))
}

// The caller's capabilities are an input of the models: with
// caps=sys_resource, root may raise qbytes above msgmnb.
func TestCapSysResourceIsAnInput(t *testing.T) {
	script := ops.NewScript("msg", []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Mode: 0o600},
		{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: 1}, MCmd: ops.MsgIPCSet, Value: ops.DefaultMsgmnb + 1, Mode: 0o600},
		{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{Handle: 1}, MCmd: ops.MsgIPCSet, Value: ops.DefaultMsgmnb + 1, Mode: 0o600, As: 1000},
	})
	caps := ops.Config{Options: map[string]string{ops.OptionCaps: ops.CapSysResource}}
	for _, c := range []struct {
		cfg  ops.Config
		want ops.Errno
	}{{ops.Config{}, ops.EPERM}, {caps, ops.OK}} {
		for _, name := range []string{"naive", "optimized"} {
			s := sidestest.Open(t, name, sub)
			outs, err := s.Impl.Exec(context.Background(), c.cfg, [][]ops.Op{script.Ops()}, nil)
			require.NoError(t, err)
			require.Equal(t, c.want, outs[0].Results[1].Err, "%s %v", name, c.cfg)
			require.Equal(t, ops.EPERM, outs[0].Results[2].Err, "an unprivileged caller never has it")
		}
	}
}
