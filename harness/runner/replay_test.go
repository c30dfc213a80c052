package runner_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// whole is a chunk no corpus script fills: the script runs in one Exec.
const whole = 1 << 20

// verdict is what a replay says, as text: "ok", the problems and the table
// of a ReplayError, or another error.
func verdict(err error) string {
	var re *runner.ReplayError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &re):
		return strings.Join(re.Problems, "\n") + "\n" + re.Table
	}
	return "error: " + err.Error()
}

// A script replayed in chunks (Reset, Apply of each chunk, Snapshot, the
// comparison carried from chunk to chunk) gets the verdict it gets in one
// Exec: the same problems and the same table, for every corpus script, on
// pairs that agree, that diverge (legacy ids under exact and renamed
// comparison) and that follow each other (msg, sem), in this process and
// through plugin processes.
func TestChunkedReplayGivesTheWholeVerdict(t *testing.T) {
	files, err := filepath.Glob("../../corpus/*/*.ops")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	scripts := make([]*ops.Script, len(files))
	for i, f := range files {
		scripts[i], err = corpus.Read(f)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		a, b     string
		rel      equiv.Relation
		asPlugin bool
	}{
		{"naive", "optimized", equiv.Exact, false},
		{"naive:alloc=legacy", "optimized", equiv.Exact, false},
		{"naive:alloc=legacy", "optimized", equiv.IDsRenamed, false},
		{"optimized", "naive:alloc=legacy", equiv.IDsRenamed, true},
		{"optimized", "kernel", equiv.Exact, false},
		{"naive", "kernel", equiv.IDsRenamed, true},
	} {
		t.Run(fmt.Sprintf("%s,%s,%s,plugin=%v", c.a, c.b, c.rel, c.asPlugin), func(t *testing.T) {
			oa, ob := open(t, c.a, c.asPlugin), open(t, c.b, c.asPlugin)
			// Through a plugin or on the kernel, a chunk of one is a call
			// an operation: the fast suite takes every tenth script (each
			// corpus directory's, by name) there, every third in process,
			// the long tests every one.
			every := 1
			if !testkit.IsLong() {
				every = 3
				if c.asPlugin || c.b == "kernel" {
					every = 10
				}
				t.Logf("every %dth script; every one with %s=1 (.ci/run does)", every, testkit.EnvLong)
			}
			failing := 0
			for i, sc := range scripts {
				if i%every != 0 {
					continue
				}
				p, ok := pairOf(t, oa, ob, sc.Subsystem, c.rel)
				if !ok {
					continue
				}
				ctx := context.Background()
				_, err := p.Replay(ctx, runner.StepsOf(sc), runner.ReplayOptions{Chunk: whole})
				want := verdict(err)
				require.NotContains(t, want, "error: ", files[i])
				if err != nil {
					failing++
				}
				for _, size := range []int{1, 2, 7} {
					n, err := p.Replay(ctx, runner.StepsOf(sc), runner.ReplayOptions{Chunk: size})
					require.Equal(t, want, verdict(err), "%s in chunks of %d", files[i], size)
					require.Equal(t, len(sc.Steps), n)
				}
			}
			t.Logf("%d of %d scripts fail on this pair", failing, len(scripts))
		})
	}
}

// copycat is a model whose own results are all EPERM and whose snapshot is
// empty, but that follows: given the other side's result or snapshot, it
// takes it.
type copycat struct{}

func (copycat) Reset(ops.Config) error           { return nil }
func (copycat) Apply(ops.Op) (ops.Result, error) { return ops.Result{Err: ops.EPERM}, nil }
func (copycat) Snapshot() (ops.Snapshot, error)  { return ops.Snapshot{}, nil }
func (copycat) Close() error                     { return nil }
func (c copycat) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	if other == nil {
		return c.Apply(op)
	}
	return *other, nil
}
func (copycat) SnapshotFollowing(other *ops.Snapshot) (ops.Snapshot, error) {
	if other == nil {
		return ops.Snapshot{}, nil
	}
	return *other, nil
}

// A side that follows follows chunk by chunk, results and final snapshot,
// as it follows a whole script; one that does not follow diverges.
func TestChunkedReplayFollows(t *testing.T) {
	a := open(t, "naive", false).side
	b := runner.Side{Name: "copycat", Impl: ops.NewLocal(ops.Info{Name: "copycat", Follows: true}, copycat{}), Follows: true}
	sc := longScript(50, nil)
	follows := &runner.Pair{A: a, B: b, Subsystem: "msg", Relation: equiv.Exact}
	a.Follows, b.Follows = true, false // the copycat leads, and naive follows
	leads := &runner.Pair{A: b, B: a, Subsystem: "msg", Relation: equiv.Exact}
	for _, size := range []int{whole, 1, 7} {
		_, err := follows.Replay(context.Background(), runner.StepsOf(sc), runner.ReplayOptions{Chunk: size})
		require.NoError(t, err, "chunks of %d", size)
		_, err = leads.Replay(context.Background(), runner.StepsOf(sc), runner.ReplayOptions{Chunk: size})
		require.ErrorContains(t, err, "disagree at step 1: h1 = get msg key=0x0 mode=0600: A -> EPERM, B -> id=0")
	}
}

// longScript is n gets of private queues, each removed at once; the step
// want lists (0-based) states a wrong result ("EEXIST").
func longScript(n int, wrong []int) *ops.Script {
	var b strings.Builder
	b.WriteString("subsystem ids\n")
	for i := 1; i <= n/2; i++ {
		fmt.Fprintf(&b, "h%d = get msg key=0x0 mode=0600\nrmid msg h%d\n", i, i)
	}
	sc, err := ops.ParseString(b.String())
	if err != nil {
		panic(err)
	}
	for _, i := range wrong {
		sc.Steps[i].Want = &ops.Result{Err: ops.EEXIST}
	}
	return sc
}

// A failing script longer than FullTable is reported with the steps that
// have problems and Context steps around each; the steps left out are
// counted in one line.
func TestLongScriptTableShowsProblemsInContext(t *testing.T) {
	a, b := open(t, "naive", false).side, open(t, "optimized", false).side
	sc := longScript(40, []int{3, 20})
	_, err := (&runner.Pair{A: a, B: b, Relation: equiv.Exact}).Replay(context.Background(), runner.StepsOf(sc), runner.ReplayOptions{Chunk: 4, FullTable: 10, Context: 2})
	var re *runner.ReplayError
	require.ErrorAs(t, err, &re)
	require.Equal(t, []string{
		"step 4 (rmid msg h2): naive returned ok, the script expects EEXIST",
		"step 21 (h11 = get msg key=0x0 mode=0600): naive returned id=10, the script expects EEXIST",
		"step 4 (rmid msg h2): optimized returned ok, the script expects EEXIST",
		"step 21 (h11 = get msg key=0x0 mode=0600): optimized returned id=10, the script expects EEXIST",
	}, re.Problems)
	require.Equal(t, `  step  A: naive  B: optimized
   ...  (step 1 not shown)
    2   ok     ok     rmid msg h1
    3   id=1   id=1   h2 = get msg key=0x0 mode=0600
    4   ok     ok     rmid msg h2
    5   id=2   id=2   h3 = get msg key=0x0 mode=0600
    6   ok     ok     rmid msg h3
   ...  (steps 7-18 not shown)
   19   id=9   id=9   h10 = get msg key=0x0 mode=0600
   20   ok     ok     rmid msg h10
   21   id=10  id=10  h11 = get msg key=0x0 mode=0600
   22   ok     ok     rmid msg h11
   23   id=11  id=11  h12 = get msg key=0x0 mode=0600
   ...  (steps 24-40 not shown)
`, re.Table)

	// Up to FullTable steps, the table is the whole script's.
	_, err = (&runner.Pair{A: a, B: b, Relation: equiv.Exact}).Replay(context.Background(), runner.StepsOf(sc), runner.ReplayOptions{Chunk: 4, FullTable: 40})
	require.ErrorAs(t, err, &re)
	require.Equal(t, 41, strings.Count(re.Table, "\n"))
}

// stuck is a model that answers every operation with success and reports
// a snapshot whose next msg id is next.
type stuck struct{ next int64 }

func (stuck) Reset(ops.Config) error           { return nil }
func (stuck) Apply(ops.Op) (ops.Result, error) { return ops.Result{}, nil }
func (s stuck) Snapshot() (ops.Snapshot, error) {
	var snap ops.Snapshot
	snap.IDs[ops.Msg].NextID = s.next
	return snap, nil
}
func (stuck) Close() error { return nil }

// A long script whose final states differ shows its last steps.
func TestLongScriptTableShowsTheEndWhenTheStatesDiffer(t *testing.T) {
	a := runner.Side{Name: "a", Impl: ops.NewLocal(ops.Info{Name: "a"}, stuck{next: -1})}
	b := runner.Side{Name: "b", Impl: ops.NewLocal(ops.Info{Name: "b"}, stuck{next: 7})}
	sc := longScript(30, nil)
	_, err := (&runner.Pair{A: a, B: b, Relation: equiv.Exact}).Replay(context.Background(), runner.StepsOf(sc), runner.ReplayOptions{Chunk: 8, FullTable: 10, Context: 3})
	var re *runner.ReplayError
	require.ErrorAs(t, err, &re)
	require.Len(t, re.Problems, 1)
	require.Contains(t, re.Problems[0], "the implementations disagree at final state differs")
	require.Equal(t, `  step  A: a  B: b
   ...  (steps 1-27 not shown)
   28   ok    ok    rmid msg h14
   29   id=0  id=0  h15 = get msg key=0x0 mode=0600
   30   ok    ok    rmid msg h15
`, re.Table)
}

// A script that turns out not to parse is an error, whether its steps so
// far fit in one chunk or not: never a verdict on the steps before it.
func TestReplayOfABadScriptIsItsError(t *testing.T) {
	a, b := open(t, "naive", false).side, open(t, "optimized", false).side
	text := "subsystem ids\nh1 = get msg key=0x0 mode=0600\nrmid msg h1\nh2 = get msg key=0x0 mode=0600\nrmid msg h3\n"
	for _, size := range []int{whole, 1, 2} {
		_, err := (&runner.Pair{A: a, B: b, Relation: equiv.Exact}).Replay(context.Background(), ops.NewScriptReader("bad.ops", strings.NewReader(text)), runner.ReplayOptions{Chunk: size})
		var pe *ops.ParseError
		require.ErrorAs(t, err, &pe, "chunks of %d", size)
		require.EqualError(t, err, "bad.ops:5: handle h3 is used before any line binds it")
		n, err := runner.RunSteps(context.Background(), ops.NewScriptReader("bad.ops", strings.NewReader(text)), a, size, func(ops.Step, ops.Result) error { return nil })
		require.ErrorAs(t, err, &pe, "chunks of %d", size)
		require.LessOrEqual(t, n, 3)
	}
}
