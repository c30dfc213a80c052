package props_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var corpusDir = filepath.Join("..", "corpus")

// builtins opens, per subsystem, every built-in that runs it: the live
// kernel where it can run here (it is left out, with a log line, where not).
func builtins(t *testing.T, names ...string) map[string][]runner.Side {
	out := map[string][]runner.Side{}
	for _, sub := range props.Subsystems() {
		for _, name := range names {
			side, why := sidestest.Try(t, name, sub)
			if why != "" {
				t.Logf("left out: %s", why)
				continue
			}
			out[sub.Name] = append(out[sub.Name], side)
		}
	}
	return out
}

// problems replays a corpus file on every side: each must give every
// result the script states, and neighbours must agree with each other.
func problems(t *testing.T, path string, sidesOf map[string][]runner.Side) []string {
	t.Helper()
	sc, err := corpus.Read(path)
	require.NoError(t, err)
	ctx := context.Background()
	ss := sidesOf[sc.Subsystem]
	require.NotEmpty(t, ss, "no implementation runs %s", sc.Subsystem)
	var out []string
	for i, s := range ss {
		m, err := runner.CheckStated(ctx, sc, s)
		require.NoError(t, err, s.Name)
		out = append(out, m...)
		if i > 0 {
			p, err := runner.NewPair(ctx, ss[i-1], s, sc.Subsystem, equiv.Exact)
			require.NoError(t, err)
			if err := p.ReplayScript(ctx, ops.NewScript(sc.Subsystem, sc.Ops())); err != nil {
				out = append(out, err.Error())
			}
		}
	}
	return out
}

// Every committed script is checked as it is stated: on every built-in
// implementation that runs its subsystem, every result it states, and
// every pair of neighbours agrees.
func TestCorpusAsStated(t *testing.T) {
	files, err := corpus.Files(corpusDir)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sidesOf := builtins(t, "naive", "optimized", "kernel")
	seen := map[string]int{}
	for _, f := range files {
		sc, err := corpus.Read(f)
		require.NoError(t, err)
		seen[sc.Subsystem]++
		t.Run(strings.TrimPrefix(f, corpusDir+"/"), func(t *testing.T) {
			if p := problems(t, f, sidesOf); len(p) > 0 {
				t.Fatalf("%s:\n%s", f, strings.Join(p, "\n"))
			}
		})
	}
	for _, sub := range props.Names() {
		require.NotZero(t, seen[sub], "no %s script under corpus/", sub)
	}
}

// Changing any one stated result of a corpus file makes the check fail:
// for one file per subsystem, every stated step is altered in turn, on a
// copy.
func TestCorpusChangedResultIsCaught(t *testing.T) {
	files, err := corpus.Files(corpusDir)
	require.NoError(t, err)
	sidesOf := builtins(t, "naive", "optimized")
	done := map[string]bool{}
	for _, f := range files {
		sc, err := corpus.Read(f)
		require.NoError(t, err)
		if done[sc.Subsystem] || runner.Stated(sc) == nil {
			continue
		}
		done[sc.Subsystem] = true
		for i, st := range sc.Steps {
			changed := *sc
			changed.Steps = append([]ops.Step(nil), sc.Steps...)
			w := *st.Want
			switch {
			case w.Err == ops.OK && !w.Blocked:
				w = ops.Result{Err: ops.EPERM}
			case w.Err == ops.E2BIG:
				w.Err = ops.EPERM
			default:
				w.Err = ops.E2BIG
			}
			changed.Steps[i].Want = &w
			tmp := filepath.Join(t.TempDir(), filepath.Base(f))
			require.NoError(t, os.WriteFile(tmp, []byte(ops.Format(&changed)), 0o644))
			require.NotEmpty(t, problems(t, tmp, sidesOf), "%s with step %d stated as %s passed", f, i+1, ops.FormatResult(st.Op, w))
		}
	}
	for _, sub := range props.Names() {
		require.True(t, done[sub], "no %s corpus file states its results", sub)
	}
}
