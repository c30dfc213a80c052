package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

// The alternatives of an operation are the other values of what its cause
// key keeps, and a key with "*" for one of them covers every value there.
func TestGeneralCause(t *testing.T) {
	op := opstest.Lines(t, "protect w:0+1 r--")[0]
	alts := ops.Alternatives(op)
	require.Len(t, alts, 1)
	require.Equal(t, "the protection (r--)", alts[0].Name)
	require.Len(t, alts[0].Ops, 7, "the eight protections but r--")
	seen := map[string]bool{}
	for _, o := range alts[0].Ops {
		seen[ops.Cause(o)] = true
		require.Equal(t, op.VMA.Start, o.VMA.Start, "only the protection changes")
	}
	require.Len(t, seen, 7)
	require.False(t, seen["protect r--"])
	g := ops.GeneralCause(op, true, map[int]bool{alts[0].Arg: true})
	require.Equal(t, "protect *", g)
	require.True(t, ops.CauseCovers(g, "protect rw-"))
	require.True(t, ops.CauseCovers(g, ops.Cause(op)))
	require.False(t, ops.CauseCovers("protect rw-", "protect r--"))
	require.False(t, ops.CauseCovers(g, "advise * x"))
	require.True(t, ops.CauseCovers("msgctl msg cmd=*", "msgctl msg cmd=IPC_STAT"))
	require.False(t, ops.CauseCovers("msgctl msg cmd=*", "msgctl shm cmd=IPC_STAT"))

	require.Empty(t, ops.Alternatives(opstest.Lines(t, "map w:0+1 rw-")[0]), "a new mapping's protection is not its cause")
	adv := ops.Alternatives(opstest.Lines(t, "map w:0+1 rw-", "advise w:0+1 dontneed")[1])
	require.Len(t, adv, 1)
	require.Len(t, adv[0].Ops, len(ops.VMAAdvices)-1)
}
