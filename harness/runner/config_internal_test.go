package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Two kernels whose configurations differ (what each reports of itself:
// one maps no zero page, the other has protection keys) get a note on
// every finding that says so, each quirk on the side that reported it (a
// side's Config.Facts are the other's, handed to it); a difference of version quirks alone, or a side without
// quirks, gets none.
func TestConfigDiffers(t *testing.T) {
	side := func(q ops.VMAQuirks) Side {
		return Side{Info: ops.Info{Facts: ops.Facts{}.With(ops.FactVMAQuirks, int64(q))}}
	}
	p := &Pair{A: side(ops.QuirkMseal | ops.QuirkNoZeroPage), B: side(ops.QuirkExecOnlyPkey | ops.QuirkRemapLookupFirst)}
	require.Equal(t, "the sides' configurations differ (no-zero-page on A only, exec-only-pkey on B only): a difference these make is the machines', not the kernels' versions", p.ConfigDiffers())
	p = &Pair{A: side(ops.QuirkMseal), B: side(ops.QuirkRemapLookupFirst)}
	require.Empty(t, p.ConfigDiffers(), "versions only")
	p = &Pair{A: Side{}, B: side(ops.QuirkNoZeroPage)}
	require.Empty(t, p.ConfigDiffers(), "a side that reports no quirks")
}
