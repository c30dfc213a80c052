package msgq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func env(p Policy) Env {
	return Env{Policy: p, Perm: func(uint32, bool) bool { return true }, Msgmax: 8192}
}

func text(n int) string { return strings.Repeat("x", n) }

// one checks that an operation had a single outcome: one(t)(Send(...)).
func one(t *testing.T) func(Call, []Outcome) (Call, Outcome) {
	return func(c Call, outs []Outcome) (Call, Outcome) {
		t.Helper()
		require.Len(t, outs, 1)
		return c, outs[0]
	}
}

// ipc-spec.md 2.5 [verified]: receivers R1(size 2, any), R2(type 7), R3(any);
// a 5-byte type-1 message gives R1 E2BIG and goes to R3; a type-7 one to R2.
func TestPipelinedSendFIFOWithE2BIG(t *testing.T) {
	e := env(WakeFits)
	q := NewQueue(16384)
	for _, r := range []Waiter{{Task: 1, BufSize: 2}, {Task: 2, Mode: Equal, Bound: 7, BufSize: 100}, {Task: 3, BufSize: 100}} {
		c, o := one(t)(Receive(q, e, r, false, false))
		require.True(t, c.Blocked)
		q = o.Q
	}
	c, o := one(t)(Send(q, e, Waiter{Task: 0, Msg: Msg{Type: 1, Text: text(5)}}, false))
	require.Equal(t, ops.OK, c.Err)
	require.Equal(t, []Completion{{Task: 1, Err: ops.E2BIG}, {Task: 3, Msg: Msg{Type: 1, Text: text(5)}}}, o.Done)
	require.Zero(t, o.Q.Qnum())
	_, o = one(t)(Send(o.Q, e, Waiter{Task: 0, Msg: Msg{Type: 7, Text: "a"}}, false))
	require.Equal(t, []Completion{{Task: 2, Msg: Msg{Type: 7, Text: "a"}}}, o.Done)
	require.Empty(t, o.Q.Receivers)
}

// fill returns a queue of capacity qbytes holding messages of these sizes
// (types 1, 2, ...) and blocked senders of these sizes (tasks 1, 2, ...).
func fill(t *testing.T, e Env, qbytes int64, msgs, senders []int) *Queue {
	q := NewQueue(qbytes)
	for i, n := range msgs {
		c, o := one(t)(Send(q, e, Waiter{Task: 0, Msg: Msg{Type: int64(i + 1), Text: text(n)}}, true))
		require.Equal(t, ops.OK, c.Err)
		q = o.Q
	}
	for i, n := range senders {
		c, o := one(t)(Send(q, e, Waiter{Task: i + 1, Msg: Msg{Type: 9, Text: text(n)}}, false))
		require.True(t, c.Blocked)
		q = o.Q
	}
	return q
}

// winners lists the distinct sets of senders that got in (outcomes may also
// differ in the order the losers wait in, which nobody sees yet).
func winners(outs []Outcome) []string {
	var w []string
	seen := map[string]bool{}
	for _, o := range outs {
		s := ""
		for _, d := range o.Done {
			s += "S" + itoa(int64(d.Task))
		}
		if !seen[s] {
			seen[s] = true
			w = append(w, s)
		}
	}
	return w
}

// kernel-probe.md §4, scenarios B1-B4, and ipc-spec.md 2.6 [verified].
func TestSenderWakeupOutcomes(t *testing.T) {
	e := env(WakeFits)
	cases := []struct {
		name    string
		msgs    []int
		senders []int
		take    int64 // the type of the message received
		want    []string
	}{
		{"B1 either fits, race", []int{50, 50}, []int{60, 30, 40}, 1, []string{"S2", "S3"}},
		{"B2 only S2 fits", []int{70, 30}, []int{60, 30, 40}, 2, []string{"S2"}},
		{"B4 head or the two others", []int{50, 50}, []int{40, 30, 20}, 1, []string{"S1", "S2S3"}},
	}
	for _, c := range cases {
		q := fill(t, e, 100, c.msgs, c.senders)
		call, outs := Receive(q, e, Waiter{Task: 0, Mode: Equal, Bound: c.take, BufSize: 1000}, true, false)
		require.Equal(t, ops.OK, call.Err, c.name)
		require.ElementsMatch(t, c.want, winners(outs), c.name)
		if len(c.want) > 1 {
			require.True(t, outs[0].Racing, c.name)
		}
	}
	// B3: one 100-byte message; any two of the three get in.
	q := fill(t, e, 100, []int{100}, []int{60, 30, 40})
	_, outs := Receive(q, e, Waiter{Task: 0, BufSize: 1000}, true, false)
	require.ElementsMatch(t, []string{"S1S2", "S1S3", "S2S3"}, winners(outs))

	// 2.6: qbytes 10 full; S1 needs 8, S2 needs 2; receiving 2 bytes lets only S2 in.
	q = fill(t, e, 10, []int{8, 2}, []int{8, 2})
	_, outs = Receive(q, e, Waiter{Task: 0, Mode: Equal, Bound: 2, BufSize: 100}, true, false)
	require.Equal(t, []string{"S2"}, winners(outs))
	_, outs = Receive(outs[0].Q, e, Waiter{Task: 0, Mode: Equal, Bound: 1, BufSize: 100}, true, false)
	require.Equal(t, []string{"S1"}, winners(outs))
}

// The msg-full-queue shape: n senders each need more than a receive frees.
// Before 4.9 every receive wakes all of them for nothing; since, none.
func TestWakeupCountersByPolicy(t *testing.T) {
	for _, p := range []Policy{WakeAll, WakeFits} {
		e := env(p)
		q := fill(t, e, 100, []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, []int{30, 30, 30})
		_, outs := Receive(q, e, Waiter{Task: 0, BufSize: 100}, true, false)
		for _, o := range outs {
			require.Empty(t, o.Done)
			if p == WakeAll {
				// The three re-queue in any order: 3! waiting orders.
				require.Len(t, outs, 6)
				require.Equal(t, Counters{Wakeups: 3, Spurious: 3, Requeues: 3}, o.Counters)
			} else {
				require.Len(t, outs, 1)
				require.Equal(t, Counters{Requeues: 3}, o.Counters)
			}
		}
	}
}

func TestFitsCountsMessages(t *testing.T) {
	e := env(WakeFits)
	q := NewQueue(3)
	for range 3 {
		c, o := one(t)(Send(q, e, Waiter{Msg: Msg{Type: 1}}, true))
		require.Equal(t, ops.OK, c.Err)
		q = o.Q
	}
	c, _ := one(t)(Send(q, e, Waiter{Msg: Msg{Type: 1}}, true))
	require.Equal(t, ops.EAGAIN, c.Err)
}

func TestSearchModesAndCopy(t *testing.T) {
	e := env(WakeFits)
	q := fill(t, e, 1000, []int{1, 2, 3, 4}, nil) // types 1..4
	mode, bound := SearchMode(-3, false, false)
	c, _ := one(t)(Receive(q, e, Waiter{Mode: mode, Bound: bound, BufSize: 10}, true, false))
	require.Equal(t, int64(1), c.Msg.Type)
	mode, bound = SearchMode(1, true, false)
	c, _ = one(t)(Receive(q, e, Waiter{Mode: mode, Bound: bound, BufSize: 10}, true, false))
	require.Equal(t, int64(2), c.Msg.Type)
	c, o := one(t)(Receive(q, e, Waiter{Mode: Number, Bound: 3, BufSize: 2}, true, true))
	require.Equal(t, ops.E2BIG, c.Err)
	require.Equal(t, int64(4), o.Q.Qnum())
	c, _ = one(t)(Receive(q, e, Waiter{Mode: Number, Bound: 3, BufSize: 2, NoError: true}, true, true))
	require.Equal(t, ops.EINVAL, c.Err)
	c, _ = one(t)(Receive(q, e, Waiter{Mode: Number, Bound: 4, BufSize: 100}, true, true))
	require.Equal(t, ops.ENOMSG, c.Err)
	c, o = one(t)(Receive(q, e, Waiter{Mode: Equal, Bound: 4, BufSize: 2}, true, false))
	require.Equal(t, ops.E2BIG, c.Err, "E2BIG on a non-blocking receive leaves the message queued")
	require.Equal(t, int64(4), o.Q.Qnum())
}

func TestSetRetriesReceiversAndRemoveKillsAll(t *testing.T) {
	e := env(WakeFits)
	q := fill(t, e, 10, []int{10}, []int{5})
	c, o := one(t)(Receive(q, e, Waiter{Task: 2, Mode: Equal, Bound: 42, BufSize: 10}, false, false))
	require.True(t, c.Blocked)
	outs := Set(o.Q, e, 20)
	require.Len(t, outs, 1)
	require.Equal(t, []Completion{{Task: 1}}, outs[0].Done)
	require.Len(t, outs[0].Q.Receivers, 1)
	require.Equal(t, []Completion{{Task: 2, Err: ops.EIDRM}}, Remove(outs[0].Q))
}
