package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The witnesses of a script observe what its final state shows: the
// address space for vma; for an IPC subsystem each listing and the
// objects it made (only those whose get succeeded), each read by the
// calls that show it; each one a valid operation its subsystem allows.
func TestWitnesses(t *testing.T) {
	text := func(w []ops.Op) []string {
		var out []string
		for _, op := range w {
			out = append(out, ops.FormatOp(op))
		}
		return out
	}
	vma := ops.Witnesses("vma", nil, nil)
	require.Equal(t, []string{"layout"}, text(vma))

	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Sem, Bind: 1, Mode: 0o600, Size: 2},
		{Kind: ops.KindGet, Type: ops.Sem, Bind: 2, Mode: 0o600, Size: 1},
	}
	results := []ops.Result{{}, {Err: ops.ENOSPC}}
	got := text(ops.Witnesses("sem", script, results))
	require.Contains(t, got, "list sem rows")
	require.Contains(t, got, "semctl sem h1 getall")
	require.Contains(t, got, "semctl sem h1 getzcnt num=1")
	require.Contains(t, got, "stat sem h1")
	for _, w := range got {
		require.NotContains(t, w, "h2", "h2's get failed: nothing to read")
	}
	spec, ok := ops.Subsystem("sem")
	require.True(t, ok)
	for _, op := range ops.Witnesses("sem", script, results) {
		require.True(t, spec.Allows(op.Kind), ops.FormatOp(op))
		require.NoError(t, ops.Validate(op))
		require.True(t, ops.Observes(op), "%s only observes", ops.FormatOp(op))
		back, err := ops.ParseOp(ops.FormatOp(op))
		require.NoError(t, err)
		require.Equal(t, op, back)
	}
	require.Empty(t, ops.Witnesses("nosuch", script, results))
}
