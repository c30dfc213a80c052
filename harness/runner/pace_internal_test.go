package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A batch that came back slowly makes the next ones smaller at once, so
// that none outlasts a call timeout on a loaded machine or a slow guest;
// faster batches let them grow back slowly, never past BatchCost and
// never below one script.
func TestPaceBoundsTheNextBatch(t *testing.T) {
	p := &pace{}
	require.Equal(t, int64(BatchCost), p.limit(), "nothing measured yet")
	script := make([]ops.Op, 1000) // 1000 plain operations
	p.observe([][]ops.Op{script}, time.Millisecond)
	require.Equal(t, int64(BatchCost), p.limit(), "1 µs a unit: BatchCost takes 2 s")
	p.observe([][]ops.Op{script}, 10*time.Millisecond)
	require.InDelta(t, 800_000, p.limit(), 1, "10 µs a unit: 8 s is 800k")
	p.observe([][]ops.Op{script}, time.Second)
	require.InDelta(t, 8_000, p.limit(), 1, "slower: at once")
	p.observe([][]ops.Op{script}, time.Microsecond)
	require.InDelta(t, 10_000, p.limit(), 1, "faster: a fifth of the way")
	p.observe([][]ops.Op{make([]ops.Op, 1)}, time.Minute)
	require.Equal(t, int64(1), p.limit(), "never below one")
}
