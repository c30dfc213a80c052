package ipcns

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
)

// queue is a queue state of n messages totalling bytes.
func queue(n int, bytes int64) *msgq.Queue {
	return &msgq.Queue{Msgs: make([]msgq.Msg, n), Cbytes: bytes}
}

// MSG_INFO reports totals over every queue; where the queues may be in
// several states, the other side's totals keep only the states of the
// choices that add up to them, and the first states add up to them.
func TestKeepTotalsFollowsMsgInfo(t *testing.T) {
	a := &Obj{MsgQ: []*msgq.Queue{queue(1, 20), queue(2, 40), queue(1, 25)}}
	b := &Obj{MsgQ: []*msgq.Queue{queue(1, 5), queue(0, 0)}}
	keepTotals([]*Obj{a, b}, msgTotals{2, 30})
	// 25+5 is the one choice with 2 messages and 30 bytes.
	require.Len(t, a.MsgQ, 1)
	require.Equal(t, int64(25), a.MsgQ[0].Cbytes)
	require.Len(t, b.MsgQ, 1)
	require.Equal(t, int64(5), b.MsgQ[0].Cbytes)

	// Two choices reach 2 messages and 25 bytes (20+5 and 15+10): the
	// states of both are kept, 40 is dropped, and the first states of the
	// queues form one of the choices.
	a = &Obj{MsgQ: []*msgq.Queue{queue(2, 40), queue(1, 20), queue(1, 15)}}
	b = &Obj{MsgQ: []*msgq.Queue{queue(1, 5), queue(1, 10), queue(0, 0)}}
	keepTotals([]*Obj{a, b}, msgTotals{2, 25})
	require.Len(t, a.MsgQ, 2)
	require.Len(t, b.MsgQ, 2)
	require.Equal(t, int64(25), a.MsgQ[0].Cbytes+b.MsgQ[0].Cbytes)
	require.Equal(t, int64(2), a.MsgQ[0].Qnum()+b.MsgQ[0].Qnum())

	// Totals no choice reaches change nothing: the divergence shows.
	keepTotals([]*Obj{a, b}, msgTotals{9, 9})
	require.Len(t, a.MsgQ, 2)
}
