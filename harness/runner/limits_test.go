package runner_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// localOptimized is the optimized built-in in process, reporting info.
func localOptimized(t *testing.T, info ops.Info) ops.Impl {
	t.Helper()
	b, err := impls.Lookup("optimized")
	require.NoError(t, err)
	m, err := b.New()
	require.NoError(t, err)
	l := ops.NewLocal(info, m)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A side that reports a machine fact (here: a kernel whose CPU has no
// protection keys, so an execute-only mapping keeps key 0) hands it to the
// other side in every run, as compare does; a model left with its 6.18
// x86 defaults would give the mapping key 1 and diverge.
func TestRunGivesEachSideTheOthersMachineFacts(t *testing.T) {
	noPkeys := ops.VMAQuirksLinux618 &^ ops.QuirkExecOnlyPkey
	machine := runner.Side{
		Name: "kernel-without-pkeys",
		Impl: localOptimized(t, ops.Info{Name: "kernel-without-pkeys", Subsystems: []string{"vma"},
			Limits: map[string]int64{ops.LimitVMAQuirks: int64(noPkeys)}}),
		Config: ops.Config{Options: map[string]string{ops.LimitPrefix + ops.LimitVMAQuirks: strconv.FormatInt(int64(noPkeys), 10)}},
	}
	model := runner.Side{Name: "optimized", Impl: localOptimized(t, ops.Info{Name: "optimized", Subsystems: []string{"vma"}})}
	sc, err := ops.ParseString("subsystem vma\nmap w:0+1 rw-\nmap w:0+1 --x\n")
	require.NoError(t, err)
	script := sc.Ops()
	res, err := runner.Run(context.Background(), runner.Options{
		A: model, B: machine, Subsystem: "vma", Relation: equiv.Exact,
		Generate: func(uint64) []ops.Op { return script }, Seed: 1, Checks: 4,
	})
	require.NoError(t, err)
	require.Equal(t, 4, res.Checks)
	require.Zero(t, res.Divergences, "the model did not take the machine's quirks: %+v", res.Scripts)
	require.Empty(t, model.Config.Options, "Run changed the caller's side")

	// ShareLimits keeps an option a side sets itself.
	mine := model
	mine.Config = ops.Config{Options: map[string]string{ops.LimitPrefix + ops.LimitVMAQuirks: "0"}}
	other := machine
	require.NoError(t, runner.ShareLimits(context.Background(), []*runner.Side{&mine, &other}))
	require.Equal(t, "0", mine.Config.Options[ops.LimitPrefix+ops.LimitVMAQuirks])
}
