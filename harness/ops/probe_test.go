package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

// Merge probes map a page beside what the script's last calls made, with
// that range's protection (a fixed remap's: its source's), then take the
// layout; none outside the window, none twice, none outside vma.
func TestMergeProbes(t *testing.T) {
	script := opstest.Lines(t, "map w:4+2 rw-", "map w:10+2 r--", "remap w:10+2 new=2 fixed to=2")
	var got []string
	for _, p := range ops.MergeProbes("vma", script) {
		require.Len(t, p, 2)
		require.Equal(t, ops.KindLayout, p[1].Kind)
		got = append(got, ops.FormatOp(p[0]))
	}
	require.Equal(t, []string{"map w:4+1 r--", "map w:1+1 r--", "map w:12+1 r--", "map w:9+1 r--", "map w:6+1 rw-", "map w:3+1 rw-"}, got)
	require.Empty(t, ops.MergeProbes("vma", opstest.Lines(t, "map w:0+64 rw-")), "the window has no page beside it")
	probes := ops.MergeProbes("vma", opstest.Lines(t, "brk 1 bytes=1", "brk 3"))
	require.Len(t, probes, 2)
	require.Equal(t, "map h:3+1 rw-", ops.FormatOp(probes[0][0]), "above the new break")
	require.Equal(t, "map h:2+1 rw-", ops.FormatOp(probes[1][0]), "a break with bytes more ends a page higher")
	require.Empty(t, ops.MergeProbes("msg", nil))
}
