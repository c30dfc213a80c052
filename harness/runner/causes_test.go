package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// lowestLost is the optimized model with one bug: a msgrcv that searches
// for the lowest type (type<0) finds nothing, and says ENOMSG where the
// model took a message (ok), refused a too-small buffer (E2BIG) or put the
// task to sleep (blocked). One bug, three result classes: three
// signatures.
type lowestLost struct{ ops.Model }

func (m lowestLost) Apply(op ops.Op) (ops.Result, error) {
	r, err := m.Model.Apply(op)
	if err == nil && op.Kind == ops.KindMsgrcv && op.Mtype < 0 && (r.Err == ops.OK || r.Err == ops.E2BIG) {
		r = ops.Result{Err: ops.ENOMSG}
	}
	return r, err
}

// openLowestLost opens the mutant in this process; it does not follow
// (the optimized model on the other side does).
func openLowestLost(t *testing.T) runner.Side {
	t.Helper()
	return openMutant(t, "lowest-lost", func(m ops.Model) ops.Model { return lowestLost{m} })
}

// openMutant opens, in this process, the optimized model with mutate's
// bug, named name; it does not follow.
func openMutant(t *testing.T, name string, mutate func(ops.Model) ops.Model) runner.Side {
	t.Helper()
	b, err := impls.Lookup("optimized")
	require.NoError(t, err)
	m, info, err := b.Start()
	require.NoError(t, err)
	info.Follows = false
	l := ops.NewLocal(info, mutate(m))
	t.Cleanup(func() { l.Close() })
	return runner.Side{Name: name, Impl: l, Info: info}
}

// Findings whose shrunk scripts diverge at the same operation for the
// same reason are one cause: the mutant's one msgrcv bug shows under
// several signatures (ok-ENOMSG, E2BIG-ENOMSG, ...), each kept as a
// finding file with its hits, and all of them under one cause whose hits
// are theirs.
func TestOneBugIsOneCause(t *testing.T) {
	p, err := runner.NewPair(context.Background(), openLowestLost(t), open(t, "optimized", false).side, "msg", equiv.Exact)
	require.NoError(t, err)
	require.True(t, p.B.Follows)
	res, dir := keepGoing(t, p, runner.Options{Checks: 400, Batch: 64})
	require.Zero(t, res.Failures)
	var sigs []string
	for _, f := range res.Findings {
		sigs = append(sigs, f.Signature)
		require.True(t, strings.HasPrefix(f.Signature, "msg/msgrcv/"), "%s: every finding is the msgrcv bug", f.Signature)
		_, err := os.Stat(f.Script)
		require.NoError(t, err, "every finding keeps its file")
	}
	require.GreaterOrEqual(t, len(sigs), 2, "the bug shows under several signatures: %v", sigs)
	require.Len(t, res.Causes, 1, "one cause: %+v", res.Causes)
	c := res.Causes[0]
	require.True(t, strings.HasPrefix(c.Key, "msg: msgrcv msg"), c.Key)
	require.Contains(t, c.Key, "type<0")
	require.Len(t, c.Signatures, len(res.Findings))
	hits := 0
	for i, s := range c.Signatures {
		require.Equal(t, res.Findings[i].Signature, s.Signature)
		require.Equal(t, res.Findings[i].Hits, s.Hits)
		require.Equal(t, res.Findings[i].Script, s.File)
		require.Equal(t, dir, filepath.Dir(filepath.Dir(s.File)))
		hits += s.Hits
	}
	require.Equal(t, hits, c.Hits)
	require.Equal(t, res.Divergences, c.Hits)
	t.Logf("cause %q: %d hits under %v", c.Key, c.Hits, sigs)
}

// protectENOMEM is the optimized model whose mprotect says ENOMEM where
// it should say EACCES (a write protection over a file opened read-only)
// or EPERM (a sealed range): the zoo's mprotect-error-enomem bug. The
// EACCES finding needs its protection (r-- is allowed there); the EPERM
// one does not (a sealed range refuses every protection).
type protectENOMEM struct{ ops.Model }

func (m protectENOMEM) Apply(op ops.Op) (ops.Result, error) {
	r, err := m.Model.Apply(op)
	if err == nil && op.Kind == ops.KindProtect && (r.Err == ops.EACCES || r.Err == ops.EPERM) {
		r.Err = ops.ENOMEM
	}
	return r, err
}

// The argument values a cause's key keeps are those that matter: a bug
// whose two findings diverge at mprotects with two protections is one
// cause, because the value of one of them does not matter (each other
// value diverges the same way), and its key says so ("protect *").
func TestArgumentsThatDoNotMatterAreNotKept(t *testing.T) {
	side := openMutant(t, "protect-enomem", func(m ops.Model) ops.Model { return protectENOMEM{m} })
	p, err := runner.NewPair(context.Background(), side, open(t, "optimized", false).side, "vma", equiv.Exact)
	require.NoError(t, err)
	res, _ := keepGoing(t, p, runner.Options{Checks: 600, Batch: 64})
	require.Zero(t, res.Failures)
	var sigs []string
	for _, f := range res.Findings {
		sigs = append(sigs, f.Signature)
	}
	require.Contains(t, sigs, "vma/protect/ENOMEM-EPERM")
	require.Contains(t, sigs, "vma/protect/ENOMEM-EACCES")
	require.Len(t, res.Causes, 1, "one cause: %+v", res.Causes)
	require.Equal(t, "vma: protect *", res.Causes[0].Key)
	require.Len(t, res.Causes[0].Signatures, len(res.Findings))
	for _, f := range res.Findings {
		if f.Signature == "vma/protect/ENOMEM-EACCES" {
			require.NotEqual(t, "vma: protect *", f.Cause, "r-- over a read-only file is allowed: the protection matters to EACCES")
		}
	}
}

// A cause is keyed by the operation where the results differ, or, where
// the divergence is an observation (a layout, a listing, the final
// state), by the last operation that made what was observed; the key
// keeps what chooses what an operation does and drops where, how much
// and whether it waits.
func TestCauseKey(t *testing.T) {
	script := opstest.Lines(t, "h1 = get msg key=0x0 mode=0600", "msgrcv msg h1 size=1 type=-3 nowait")
	require.Equal(t, "msg: msgrcv msg type<0", runner.CauseKey("msg", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 1}, "sig"))
	script = opstest.Lines(t, "h1 = get msg key=0x0 mode=0600", "msgrcv msg h1 size=100 type=-1 task=t1")
	require.Equal(t, "msg: msgrcv msg type<0", runner.CauseKey("msg", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 1}, "sig"))
	script = opstest.Lines(t, "map w:0+2 rw-", "advise w:0+1 guard_install", "layout")
	require.Equal(t, "vma: advise guard_install", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 1}, "sig"))
	require.Equal(t, "vma: advise guard_install", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 2}, "sig"))
	require.Equal(t, "vma: advise guard_install", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: -1}, "sig"))
	require.Equal(t, "vma: map", runner.CauseKey("vma", script[:1], [2]ops.Outcome{}, &equiv.Divergence{Step: -1}, "sig"))
	require.Equal(t, "sig", runner.CauseKey("vma", nil, [2]ops.Outcome{}, &equiv.Divergence{Step: -1}, "sig"))

	// mlock and munlock are one call in two directions (apply_vma_lock_flags):
	// a bug of it is one cause whichever showed it (the zoo's
	// mlock-merge-next: lock and unlock both ok against ENOMEM); onfault
	// still chooses.
	script = opstest.Lines(t, "map w:0+2 rw-", "lock w:0+1", "unlock w:0+1", "lock w:0+1 onfault")
	require.Equal(t, "vma: mlock", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 1}, "sig"))
	require.Equal(t, "vma: mlock", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 2}, "sig"))
	require.Equal(t, "vma: mlock onfault", runner.CauseKey("vma", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 3}, "sig"))

	// A stat, a *ctl read or a semctl get only observes: the cause is the
	// call before it; in the ids subsystem the type word is left out.
	script = opstest.Lines(t, "h1 = get sem key=0x0 mode=0600 size=2", "semop sem h1 0:-1,1:0 task=t1", "semctl sem h1 getzcnt num=1")
	require.Equal(t, "sem: semop sem timeout=none", runner.CauseKey("sem", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 2}, "sig"))
	script = opstest.Lines(t, "h1 = get msg key=0x0 mode=0600", "msgctl msg h1 stat")
	require.Equal(t, "msg: get msg", runner.CauseKey("msg", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 1}, "sig"))
	script = opstest.Lines(t, "h1 = get shm key=0x0 mode=0600 size=1", "rmid shm h1", "list shm rows")
	require.Equal(t, "ids: rmid", runner.CauseKey("ids", script, [2]ops.Outcome{}, &equiv.Divergence{Step: 2}, "sig"))

	// Where the sides differ only in which sleeper a call completed, the
	// cause is the call the sleeper sleeps in.
	script = opstest.Lines(t, "h1 = get msg key=0x0 mode=0600", "msgrcv msg h1 size=1 type=-3 task=t1", "msgsnd msg h1 type=1 size=1 fill=0 nowait")
	outs := [2]ops.Outcome{{Results: make([]ops.Result, 3)}, {Results: make([]ops.Result, 3)}}
	for i := range outs {
		outs[i].Results[1].Blocked = true
	}
	outs[0].Results[2].Done = []ops.Completion{{Task: 1, Recv: true, Msg: ops.Message{Type: 1, Text: "a"}}}
	require.Equal(t, "msg: msgrcv msg type<0", runner.CauseKey("msg", script, outs, &equiv.Divergence{Step: 2}, "sig"))
	outs[1].Results[2].Err = ops.EAGAIN // the call's own result differs too: its own cause
	require.Equal(t, "msg: msgsnd msg", runner.CauseKey("msg", script, outs, &equiv.Divergence{Step: 2}, "sig"))
}

// cancelAtBug is protectENOMEM that ends the run at the fourth script it
// starts after its bug first showed: the script that met it is checked
// (and run again) by then, and the run ends while it is shrunk.
type cancelAtBug struct {
	protectENOMEM
	cancel         context.CancelFunc
	hits, restarts *int
}

func (m cancelAtBug) Apply(op ops.Op) (ops.Result, error) {
	r, err := m.protectENOMEM.Apply(op)
	if err == nil && op.Kind == ops.KindProtect && r.Err == ops.ENOMEM {
		*m.hits++
	}
	return r, err
}

// Reset counts the scripts started after the bug showed.
func (m cancelAtBug) Reset(c ops.Config) error {
	if *m.hits > 0 {
		if *m.restarts++; *m.restarts == 4 {
			m.cancel()
		}
	}
	return m.protectENOMEM.Reset(c)
}

// A divergence found when the run ends (an interrupt, its time up) is kept
// as it was found, stored and reported, never lost to the shrink that
// could not run.
func TestADivergenceTheRunEndsBeforeShrinkingIsKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hits, restarts := 0, 0
	side := openMutant(t, "protect-enomem", func(m ops.Model) ops.Model { return cancelAtBug{protectENOMEM{m}, cancel, &hits, &restarts} })
	p, err := runner.NewPair(context.Background(), side, open(t, "optimized", false).side, "vma", equiv.Exact)
	require.NoError(t, err)
	sub, err := props.Lookup("vma")
	require.NoError(t, err)
	o := runner.Options{Pairs: []*runner.Pair{p}, Source: runner.Seeded(sub.RapidScripts(equiv.Exact)), Seed: 1,
		KeepGoing: true, Corpus: t.TempDir(), Checks: 600, Batch: 1}
	res, err := runner.Run(ctx, o)
	require.NoError(t, err)
	require.True(t, res.Interrupted)
	require.Len(t, res.Findings, 1, "the divergence found is kept")
	require.NotEmpty(t, res.Findings[0].Script, "and stored")
	text, err := os.ReadFile(res.Findings[0].Script)
	require.NoError(t, err)
	require.Contains(t, string(text), "NOT SHRUNK")
	require.Contains(t, string(text), "protect ")
}
