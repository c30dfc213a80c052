//go:build linux && amd64

package kernel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
)

// TestRunCovered: a run that asks for coverage gets the same results as one
// that does not; where the kernel has KCOV (a guest of ci/kernel.sh
// --cover) every operation of the worker thread comes with program
// counters, and elsewhere none does (this machine's kernel has no KCOV).
func TestRunCovered(t *testing.T) {
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Key: 5, Creat: true, Mode: 0o600},
		{Kind: ops.KindStat, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
	}
	plain, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	require.Nil(t, plain.Observed, "no observation asked for, none made")
	covered, err := m.Run(ops.Config{Observe: ops.Observing{Cover: true}}, script)
	require.NoError(t, err)
	require.Equal(t, plain.Results, covered.Results)
	require.Equal(t, plain.Snapshot, covered.Snapshot)
	_, fact := m.Facts().Get(ops.FactKCOV)
	require.Equal(t, kcov.Available(), fact, "the kcov fact says whether %s exists", kcov.Path)
	if !kcov.Available() {
		for i, o := range covered.Observed {
			require.Nil(t, o.PCs, "op %d has PCs on a kernel without KCOV", i)
		}
		t.Skipf("the rest needs a kernel with KCOV: %v", kcov.ErrNoKCOV)
	}
	require.Len(t, covered.Observed, len(script))
	for i, o := range covered.Observed {
		require.NotEmpty(t, o.PCs, "op %d (%s) reached no kernel code", i, ops.FormatOp(script[i]))
	}
}
