package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// leaky is a side that goes wrong after it ran some scripts, whatever its
// resets, until it is restarted: what a kernel that leaks (commit charge a
// buggy brk never gives back) looks like.
type leaky struct {
	ops.Impl
	mu        sync.Mutex
	ran       int
	leakAfter int
	restarts  int
}

func (l *leaky) Exec(ctx context.Context, cfg ops.Config, scripts [][]ops.Op, follow []ops.Outcome) ([]ops.Outcome, error) {
	outs, err := l.Impl.Exec(ctx, cfg, scripts, follow)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range outs {
		if l.ran >= l.leakAfter {
			for j := range outs[i].Results {
				if outs[i].Results[j].Err == 0 {
					outs[i].Results[j].Err = ops.ENOSPC
				}
			}
		}
		l.ran++
	}
	return outs, err
}

func (l *leaky) Restart(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran, l.restarts = 0, l.restarts+1
	return nil
}

// runLeaky compares optimized with an optimized side that goes wrong after
// leakAfter scripts, over checks ids scripts with --keep-going, its
// findings written to corpus ("" for none).
func runLeaky(t *testing.T, leakAfter, checks int, corpus string) (*runner.Result, *leaky) {
	t.Helper()
	s, err := props.Lookup("ids")
	require.NoError(t, err)
	a, b := open(t, "optimized", false), open(t, "optimized", false)
	l := &leaky{Impl: b.side.Impl, leakAfter: leakAfter}
	b.side.Impl = l
	p, ok := pairOf(t, a, b, "ids", equiv.Exact)
	require.True(t, ok)
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs: []*runner.Pair{p}, Source: runner.Seeded(s.RapidScripts(equiv.Exact)), Seed: 3, Checks: checks, Batch: 8,
		KeepGoing: true, Corpus: corpus,
	})
	require.NoError(t, err)
	require.NotEmpty(t, res.Findings)
	return res, l
}

// Divergences that a side shows only after earlier scripts left it in a
// state its reset does not undo are checked again on restarted sides at
// the end of the run: there they agree, so each is said to need a state
// that outlived the reset, and they are one cause however many signatures
// they made; their records say so.
func TestDivergencesOfALeakingSideAreOneCause(t *testing.T) {
	res, l := runLeaky(t, 30, 80, t.TempDir())
	require.Equal(t, 1, l.restarts, "one restart, after the run")
	for _, f := range res.Findings {
		require.GreaterOrEqual(t, f.Index, 30, "nothing diverged before the leak")
		require.True(t, f.OutlivesReset, f.Signature)
		require.Equal(t, "ids: state outlives the reset", f.Cause)
		text, err := os.ReadFile(f.Script)
		require.NoError(t, err)
		require.True(t, strings.Contains(string(text), "reset between scripts did not undo"), "%s:\n%s", filepath.Base(f.Script), text)
	}
	require.Len(t, res.Causes, 1)
}

// A side that differs from its first script on differs on a fresh one
// too: its findings keep their own causes.
func TestADivergenceAFreshSideShowsKeepsItsCause(t *testing.T) {
	res, l := runLeaky(t, 0, 20, "")
	for _, f := range res.Findings {
		require.False(t, f.OutlivesReset, f.Signature)
		require.NotContains(t, f.Cause, "outlives")
	}
	// The first recheck runs on the sides restarted after the run; each
	// later one that diverges runs again on sides restarted for it.
	require.Equal(t, len(res.Findings), l.restarts)
}

// A side that leaks again within the recheck (after two scripts, as the
// zoo's brk kernel did after a few brk calls) does not turn the later
// findings into causes of their own: each one that diverges on a side an
// earlier recheck ran on runs again on sides restarted for it, and there
// agrees.
func TestARecheckThatLeaksRestartsForTheNext(t *testing.T) {
	res, l := runLeaky(t, 2, 60, "")
	require.Greater(t, len(res.Findings), 2, "the test wants more findings than the leak's start")
	for _, f := range res.Findings {
		require.True(t, f.OutlivesReset, f.Signature)
	}
	require.Len(t, res.Causes, 1)
	require.Greater(t, l.restarts, 1)
}

// buggyLeaky is a side with a bug of its own (an IPC_RMID that works fails
// with EINVAL) that also leaks once it ran a few scripts with an IPC_RMID, whatever
// its resets, until it is restarted: what the zoo's brk kernel was, whose
// bug leaked commit charge.
type buggyLeaky struct {
	ops.Impl
	mu       sync.Mutex
	rmids    int
	restarts int
}

func (l *buggyLeaky) Exec(ctx context.Context, cfg ops.Config, scripts [][]ops.Op, follow []ops.Outcome) ([]ops.Outcome, error) {
	outs, err := l.Impl.Exec(ctx, cfg, scripts, follow)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range outs {
		leaks := l.rmids >= 3
		for j := range outs[i].Results {
			switch {
			case j >= len(scripts[i]) || outs[i].Results[j].Err != 0:
			case scripts[i][j].Kind == ops.KindRmid:
				outs[i].Results[j] = ops.Result{Err: ops.EINVAL}
			case leaks:
				outs[i].Results[j].Err = ops.ENOSPC
			}
		}
		if slices.ContainsFunc(scripts[i], func(o ops.Op) bool { return o.Kind == ops.KindRmid }) {
			l.rmids++
		}
	}
	return outs, err
}

func (l *buggyLeaky) Restart(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rmids, l.restarts = 0, l.restarts+1
	return nil
}

// A finding shrunk or re-run on a side that had begun to leak records
// the leak's divergence (an earlier step, another result), not its own;
// on the fresh sides of the recheck it diverges otherwise: its cause is
// judged there (the IPC_RMID), and its record's results become the fresh
// sides', so that a replay on a fresh kernel shows what it says.
func TestAFindingShrunkOnALeakingSideIsJudgedFresh(t *testing.T) {
	s, err := props.Lookup("ids")
	require.NoError(t, err)
	a, b := open(t, "optimized", false), open(t, "optimized", false)
	l := &buggyLeaky{Impl: b.side.Impl}
	b.side.Impl = l
	p, ok := pairOf(t, a, b, "ids", equiv.Exact)
	require.True(t, ok)
	dir := t.TempDir()
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs: []*runner.Pair{p}, Source: runner.Seeded(s.RapidScripts(equiv.Exact)), Seed: 3, Checks: 60, Batch: 8,
		KeepGoing: true, Corpus: dir,
	})
	require.NoError(t, err)
	var rmid *runner.Finding
	for i, f := range res.Findings {
		if f.Cause == "ids: rmid" || strings.HasPrefix(f.Cause, "ids: rmid ") {
			rmid = &res.Findings[i]
		}
	}
	require.NotNil(t, rmid, "the IPC_RMID's bug is a cause of its own: %+v", res.Findings)
	text, err := os.ReadFile(rmid.Script)
	require.NoError(t, err)
	// Seed 3 first sees it on a side that has not leaked yet, and its
	// shrink and re-run see the leak (read_next_id: ENOSPC at step 1).
	require.Contains(t, string(text), "as it did where it was shrunk", "%s", text)
	require.Regexp(t, `(?m)^#\s+\d+\*\s+ok\s+EINVAL\s+rmid `, string(text), "the record states the fresh sides' results")
	require.Len(t, res.Causes, 2, "the IPC_RMID, and the leak: %+v", res.Causes)
}
