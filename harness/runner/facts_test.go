package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// localOptimized is the optimized built-in in process, reporting info.
func localOptimized(t *testing.T, info ops.Info) ops.Impl {
	t.Helper()
	b, err := impls.Lookup("optimized")
	require.NoError(t, err)
	m, _, err := b.Start()
	require.NoError(t, err)
	l := ops.NewLocal(info, m)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A side that reports a machine fact (here: a kernel whose CPU has no
// protection keys, so an execute-only mapping keeps key 0) hands it to the
// other side through the pair, as compare does; a model left with its 6.18
// x86 defaults would give the mapping key 1 and diverge.
func TestPairGivesEachSideTheOthersMachineFacts(t *testing.T) {
	noPkeys := ops.VMAQuirksLinux618 &^ ops.QuirkExecOnlyPkey
	facts := ops.Facts{}.With(ops.FactVMAQuirks, int64(noPkeys))
	machine := runner.Side{
		Name: "kernel-without-pkeys",
		Impl: localOptimized(t, ops.Info{Name: "kernel-without-pkeys", Subsystems: []string{"vma"}, Facts: facts}),
		// The stand-in kernel is a model: it must be told its own quirks.
		Config: ops.Config{Facts: facts},
	}
	model := runner.Side{Name: "optimized", Impl: localOptimized(t, ops.Info{Name: "optimized", Subsystems: []string{"vma"}})}
	sc := opstest.Script(t, "subsystem vma\nmap w:0+1 rw-\nmap w:0+1 --x\n")
	script := sc.Ops()
	p, err := runner.NewPair(context.Background(), model, machine, "vma", equiv.Exact)
	require.NoError(t, err)
	require.Equal(t, facts, p.A.Config.Facts, "the model was not given the machine's facts")
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs: []*runner.Pair{p}, Source: runner.Seeded(func(uint64) []ops.Op { return script }), Seed: 1, Checks: 4,
	})
	require.NoError(t, err)
	require.Equal(t, 4, res.Checks)
	require.Zero(t, res.Divergences, "the model did not take the machine's quirks: %+v", res.Scripts)
	require.True(t, model.Config.Facts.Empty(), "NewPair changed the caller's side")

	// Without the facts, the same script diverges: the test can fail.
	bare := *p
	bare.A.Config.Facts = ops.Facts{}
	v, err := bare.CheckOne(context.Background(), script)
	require.NoError(t, err)
	require.True(t, v.Diverged(), "the facts changed nothing: this test proves nothing")

	// A fact a side's Config states itself is kept.
	mine := model
	mine.Config = ops.Config{Facts: ops.Facts{}.With(ops.FactVMAQuirks, 0)}
	p, err = runner.NewPair(context.Background(), mine, machine, "vma", equiv.Exact)
	require.NoError(t, err)
	q, ok := p.A.Config.Facts.VMAQuirks()
	require.True(t, ok)
	require.Zero(t, q)
}

// Facts travel by name and come back the same; a name this build does not
// know is left out and said.
func TestFactsByName(t *testing.T) {
	f := ops.Facts{}.With(ops.FactShmMaxPages, 12345).With(ops.FactVMAQuirks, int64(ops.QuirkKSM))
	back, unknown := ops.FactsFromMap(f.Map())
	require.Empty(t, unknown)
	require.Equal(t, f, back)
	_, unknown = ops.FactsFromMap(map[string]int64{"base_small": 1})
	require.Equal(t, []string{"base_small"}, unknown)
	require.Equal(t, "shm_max_pages=12345,vma_quirks=ksm", f.String())
	require.Equal(t, "-", ops.Facts{}.String())
}

// A finding's facts line reads back as the facts it was written from, the
// VMA quirks (names joined by commas) among them.
func TestParseFacts(t *testing.T) {
	for _, f := range []ops.Facts{
		{},
		ops.Facts{}.With(ops.FactShmMaxPages, 117042),
		ops.Facts{}.With(ops.FactVMAQuirks, int64(ops.QuirkKSM|ops.QuirkRemapLookupFirst|ops.QuirkMmapNextFirst)).With(ops.FactHugePages, -1),
		ops.Facts{}.With(ops.FactVMAQuirks, 0).With(ops.FactHugePageKiB, 2048),
	} {
		back, err := ops.ParseFacts(f.String())
		require.NoError(t, err, f.String())
		require.Equal(t, f, back, f.String())
	}
	for _, bad := range []string{"ksm", "vma_quirks=nope", "shm_max_pages=x", "nofact=1"} {
		_, err := ops.ParseFacts(bad)
		require.Error(t, err, bad)
	}
}
