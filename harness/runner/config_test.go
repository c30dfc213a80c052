package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Two kernels of one version on two machines, one with a zero page and one
// without (a read fault there allocates, and the VMA gets an anon_vma):
// what the zero page changes (merges, VM_ACCOUNT) is the machines', and the
// optimized model, given each side's facts, shows it. Those divergences
// are reported apart, under one entry naming the configuration quirks
// that differ; a bug of one side is still a finding.
func TestConfigurationsExplainTheirDifferences(t *testing.T) {
	q, ok := ops.VMAQuirksOf("6.18")
	require.True(t, ok)
	side := func(name string, config ops.VMAQuirks, mutate func(ops.Model) ops.Model) runner.Side {
		facts := ops.Facts{}.With(ops.FactVMAQuirks, int64(q|config))
		s := openMutant(t, name, func(m ops.Model) ops.Model { return ownFacts{mutate(m), facts} })
		s.Info.Facts = facts
		s.Info.Version = "Linux 6.18.44"
		return s
	}
	same := func(m ops.Model) ops.Model { return m }
	run := func(b runner.Side) *runner.Result {
		a := side("zero-page", 0, same)
		p, err := runner.NewPair(context.Background(), a, b, "vma", equiv.Exact)
		require.NoError(t, err)
		require.False(t, p.A.Follows || p.B.Follows)
		j := open(t, "optimized", false).side
		p.Judge = &j
		res, _ := keepGoing(t, p, runner.Options{Checks: 600, Batch: 64})
		require.Zero(t, res.Failures)
		return res
	}

	res := run(side("no-zero-page", ops.QuirkNoZeroPage, same))
	require.Zero(t, res.Divergences, "%+v", res.Findings)
	require.Len(t, res.Expected, 1, "%+v", res.Expected)
	e := res.Expected[0]
	require.Equal(t, "vma/*", e.Pattern)
	require.Contains(t, e.Reason, "(no-zero-page on B only)")
	require.NotZero(t, e.Hits, "the zero page makes differences: the test wants some")

	res = run(side("no-zero-page-enomem", ops.QuirkNoZeroPage, func(m ops.Model) ops.Model { return protectENOMEM{m} }))
	var sigs []string
	for _, f := range res.Findings {
		sigs = append(sigs, f.Signature)
	}
	require.Contains(t, sigs, "vma/protect/EACCES-ENOMEM", "a bug of one side stays a finding")
}

// ownFacts is a model that, as a kernel does, follows its own facts
// whatever facts it is handed.
type ownFacts struct {
	ops.Model
	facts ops.Facts
}

func (m ownFacts) Reset(cfg ops.Config) error {
	cfg.Facts = m.facts
	return m.Model.Reset(cfg)
}
