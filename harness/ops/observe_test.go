package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// FirstSeen keeps each program counter once, where it was first reported.
func TestFirstSeen(t *testing.T) {
	require.Equal(t, []uint64{3, 1, 2}, ops.FirstSeen([]uint64{3, 1, 3, 2, 1, 3}))
	require.Empty(t, ops.FirstSeen(nil))
}
