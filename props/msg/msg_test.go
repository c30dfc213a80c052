package msg

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	ids "github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/props/sides"
)

func side(t testing.TB, name string) runner.Side { return sides.Open(t, name, "msg") }

// check runs one script on both sides (the follower after the other) and
// fails on any divergence.
func check(t interface{ Fatalf(string, ...any) }, a, b runner.Side, script []ops.Op) {
	if err := runner.Replay(context.Background(), ops.NewScript("msg", script), a, b, equiv.Exact); err != nil {
		if re, ok := err.(*runner.ReplayError); ok {
			t.Fatalf("%s vs %s: %s\n%s", a.Name, b.Name, re.Problem, re.Table)
		}
		t.Fatalf("%s vs %s: %v", a.Name, b.Name, err)
	}
}

func TestTextRoundTrip(t *testing.T) {
	m, err := optimized.New()
	require.NoError(t, err)
	rapid.Check(t, ids.TextRoundTrip("msg", Draw, m))
}

func TestNaiveOptimized(t *testing.T) {
	a, b := side(t, "naive"), side(t, "optimized")
	rapid.Check(t, func(t *rapid.T) { check(t, a, b, Draw(ids.NewRapidSource(t))) })
}

func TestOptimizedKernel(t *testing.T) {
	a, b := side(t, "optimized"), side(t, "kernel")
	rapid.Check(t, func(t *rapid.T) { check(t, a, b, Draw(ids.NewRapidSource(t))) })
}

// The generator must make what it is for: tasks that block and are later
// completed, and woken senders that race.
func TestGeneratorMakesBlockingAndRaces(t *testing.T) {
	a := side(t, "optimized")
	gen := RapidScripts()
	blocked, races := 0, 0
	const n = 300
	for seed := range uint64(n) {
		script := gen(seed)
		outs, err := a.Impl.Exec(context.Background(), ops.Config{}, [][]ops.Op{script})
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

// gopterPair runs the commands' operations as a growing script on both
// sides: each command re-runs the prefix, so the follower always follows.
func gopterPair(a, b runner.Side) *commands.ProtoCommands {
	type sut struct{ script []ops.Op }
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest { return &sut{} },
		InitialStateGen: func(*gopter.GenParameters) *gopter.GenResult {
			return gopter.NewGenResult(NewShadow(), gopter.NoShrinker)
		},
		GenCommandFunc: func(st commands.State) gopter.Gen {
			return ids.OpGen(st.(*Shadow)).Map(func(d ids.Drawn) commands.Command {
				return &commands.ProtoCommand{
					Name: ops.FormatOp(d.Op),
					RunFunc: func(s commands.SystemUnderTest) commands.Result {
						u := s.(*sut)
						u.script = append(u.script, d.Op)
						return runner.Replay(context.Background(), ops.NewScript("msg", u.script), a, b, equiv.Exact)
					},
					NextStateFunc: func(commands.State) commands.State { return d.After },
					PostConditionFunc: func(_ commands.State, r commands.Result) *gopter.PropResult {
						if err, _ := r.(error); err != nil {
							return &gopter.PropResult{Status: gopter.PropFalse, Error: err}
						}
						return &gopter.PropResult{Status: gopter.PropTrue}
					},
				}
			})
		},
	}
}

func TestGopterCommands(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.Rng.Seed(7)
	params.MaxSize = 30
	props := gopter.NewProperties(params)
	props.Property("naive = optimized", commands.Prop(gopterPair(side(t, "naive"), side(t, "optimized"))))
	props.TestingRun(t)
}

// FuzzMsg turns the fuzzer's bytes into a script (one byte a choice) and
// compares naive with optimized, and optimized with the kernel when it runs
// msg here.
func FuzzMsg(f *testing.F) {
	a, b := side(f, "naive"), side(f, "optimized")
	var k *runner.Side
	if m, err := kernel.New(); err == nil && slices.Contains(kernel.Info().Subsystems, "msg") {
		l := ops.NewLocal(kernel.Info(), m)
		f.Cleanup(func() { l.Close() })
		k = &runner.Side{Name: "kernel", Impl: l}
	} else {
		f.Logf("fuzzing the models only: the live kernel needs a private IPC namespace with msg (%v)", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script := Script(&ids.ByteSource{Data: data}, 4+int(len(data)%40))
		check(t, a, b, script)
		if k != nil {
			check(t, *k, b, script)
		}
	})
}

func TestCorpusReplay(t *testing.T) {
	files, err := corpus.Files(filepath.Join("..", "..", "corpus", "msg"))
	require.NoError(t, err)
	a, b := side(t, "naive"), side(t, "optimized")
	for _, f := range files {
		sc, err := corpus.Read(f)
		require.NoError(t, err)
		t.Run(filepath.Base(f), func(t *testing.T) { check(t, a, b, sc.Ops()) })
	}
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
			s := side(t, name)
			outs, err := s.Impl.Exec(context.Background(), c.cfg, [][]ops.Op{script.Ops()})
			require.NoError(t, err)
			require.Equal(t, c.want, outs[0].Results[1].Err, "%s %v", name, c.cfg)
			require.Equal(t, ops.EPERM, outs[0].Results[2].Err, "an unprivileged caller never has it")
		}
	}
}
