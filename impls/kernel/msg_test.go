//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// runScript runs a script (text with expected results) on m from a fresh
// namespace, checks every expected result and returns the results.
func runScript(tb testing.TB, m *Model, text string) []ops.Result {
	tb.Helper()
	s, err := ops.ParseString(text)
	require.NoError(tb, err)
	require.NoError(tb, m.Reset(ops.Config{}))
	h := ops.Handles{}
	out := make([]ops.Result, 0, len(s.Steps))
	for i, st := range s.Steps {
		r := apply(tb, m, h.Resolve(st.Op))
		h.Record(st.Op, r)
		if st.Want != nil {
			require.Equal(tb, ops.FormatResult(st.Op, *st.Want), ops.FormatResult(st.Op, r),
				"step %d: %s", i+1, ops.FormatOp(st.Op))
		}
		out = append(out, r)
	}
	return out
}

// ipc-spec 2.5 [verified]: a message goes to the first sleeping receiver
// that accepts it; one whose buffer is too small gets E2BIG and the walk
// goes on. q_lrpid is the receiver's.
func TestMsgPipelinedSend(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgrcv msg h1 size=2 type=0 task=t1 -> blocked
msgrcv msg h1 size=64 type=7 task=t2 -> blocked
msgrcv msg h1 size=64 type=0 task=t3 -> blocked
msgsnd msg h1 type=1 size=5 fill=0 nowait -> ok ; t1 E2BIG ; t3 type=1 text=abcde
msgctl msg h1 stat -> ret=0 {0x0 0 600 0 0 t0 t3 0 0 0 0 * * *} qbytes=16384
msgsnd msg h1 type=7 size=3 fill=1 task=t4 -> ok ; t2 type=7 text=bcd
msgctl msg h1 stat -> ret=0 {0x0 0 600 0 0 t4 t2 0 0 0 0 * * *} qbytes=16384
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.QueueState{{ID: 0, Qbytes: 16384}}, s.Queues)
}

// ipc-spec 2.6 [verified]: after a receive only the senders whose message
// fits now are woken; with one fitting sender the outcome is exact.
func TestMsgSenderWakeup(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=16385 mode=0600 -> EPERM
msgctl msg h1 set qbytes=10 mode=0600 -> ok
msgsnd msg h1 type=1 size=2 fill=0 nowait -> ok
msgsnd msg h1 type=2 size=8 fill=0 nowait -> ok
msgsnd msg h1 type=3 size=8 fill=1 task=t1 -> blocked
msgsnd msg h1 type=4 size=2 fill=2 task=t2 -> blocked
msgsnd msg h1 type=5 size=1 fill=0 nowait -> EAGAIN
msgrcv msg h1 size=64 type=0 nowait -> type=1 text=ab ; t2 ok
msgrcv msg h1 size=64 type=0 nowait -> type=2 text=abcdefgh ; t1 ok
msgctl msg h1 stat -> ret=0 {0x0 0 600 10 2 t1 t0 0 0 0 0 * * *} qbytes=10
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.QueueState{{ID: 0, Qbytes: 10, Msgs: []ops.Message{
		{Type: 4, Text: "cd"}, {Type: 3, Text: "bcdefghi"},
	}}}, s.Queues)
}

// IPC_SET raising qbytes wakes a sender that now fits [verified]; the
// qbytes value is an int to the kernel.
func TestMsgSetWakesSender(t *testing.T) {
	runScript(t, newModel(t), `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=4 mode=0600 -> ok
msgsnd msg h1 type=1 size=4 fill=0 nowait -> ok
msgsnd msg h1 type=1 size=3 fill=0 task=t1 -> blocked
msgsnd msg h1 type=1 size=5 fill=0 task=t2 -> blocked
msgctl msg h1 set qbytes=7 mode=0640 -> ok ; t1 ok
msgctl msg h1 set qbytes=4294967308 mode=0640 -> ok ; t2 ok
msgctl msg h1 stat -> ret=0 {0x0 0 640 12 3 t2 0 0 0 0 0 * 0 *} qbytes=12
`)
}

// IPC_RMID: every sleeping sender and receiver gets EIDRM [verified].
func TestMsgRmidWakesSleepers(t *testing.T) {
	runScript(t, newModel(t), `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
h2 = get msg key=0x0 mode=0600 -> id=1
msgctl msg h1 set qbytes=0 mode=0600 -> ok
msgsnd msg h1 type=1 size=0 fill=0 nowait -> EAGAIN
msgsnd msg h1 type=1 size=1 fill=0 task=t1 -> blocked
msgrcv msg h1 size=8 type=0 task=t2 -> blocked
msgrcv msg h2 size=8 type=0 task=t3 -> blocked
rmid msg h1 task=t4 -> ok ; t1 EIDRM ; t2 EIDRM
rmid msg h2 -> ok ; t3 EIDRM
list msg -> []
`)
}

// An operation by a task asleep in an earlier call is EBUSY and makes no
// syscall; exit of such a task too.
func TestMsgBusyTask(t *testing.T) {
	runScript(t, newModel(t), `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgrcv msg h1 size=8 type=0 task=t1 -> blocked
msgsnd msg h1 type=1 size=1 fill=0 nowait task=t1 -> EBUSY
msgctl msg h1 stat task=t1 -> EBUSY
rmid msg h1 task=t1 -> EBUSY
exit task=t1 -> EBUSY
msgctl msg h1 stat -> ret=0 {0x0 0 600 0 0 0 0 0 0 0 0 0 0 *} qbytes=16384
msgsnd msg h1 type=1 size=1 fill=0 nowait -> ok ; t1 type=1 text=a
exit task=t1 -> ok
msgrcv msg h1 size=8 type=0 nowait task=t1 -> ENOMSG
`)
}

// The message count is limited by qbytes too; MSG_COPY rules; E2BIG leaves
// the message queued; msgsnd argument errors [verified, msgt.c].
func TestMsgNonBlockingRules(t *testing.T) {
	runScript(t, newModel(t), `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=3 mode=0600 -> ok
msgsnd msg h1 type=1 size=0 fill=0 nowait -> ok
msgsnd msg h1 type=1 size=0 fill=0 nowait -> ok
msgsnd msg h1 type=1 size=0 fill=0 nowait -> ok
msgsnd msg h1 type=1 size=0 fill=0 nowait -> EAGAIN
h2 = get msg key=0x0 mode=0600 -> id=1
msgsnd msg h2 type=0 size=1 fill=0 nowait -> EINVAL
msgsnd msg h2 type=-3 size=1 fill=0 nowait -> EINVAL
msgsnd msg h2 type=1 size=9000 fill=0 nowait -> EINVAL
msgsnd msg h2 type=1 size=-1 fill=0 nowait -> EINVAL
msgsnd msg h2 type=5 size=3 fill=0 nowait -> ok
msgsnd msg h2 type=6 size=4 fill=1 nowait -> ok
msgrcv msg h2 size=8 type=1 nowait copy -> type=6 text=bcde
msgrcv msg h2 size=8 type=2 nowait copy -> ENOMSG
msgrcv msg h2 size=8 type=-1 nowait copy -> ENOMSG
msgrcv msg h2 size=2 type=0 nowait copy -> E2BIG
msgrcv msg h2 size=2 type=0 nowait noerror copy -> EINVAL
msgrcv msg h2 size=8 type=0 copy task=t1 -> EINVAL
msgrcv msg h2 size=8 type=0 nowait except copy -> EINVAL
msgctl msg h2 stat -> ret=0 {0x0 0 600 7 2 t0 0 0 0 0 0 * 0 *} qbytes=16384
msgrcv msg h2 size=2 type=0 nowait -> E2BIG
msgrcv msg h2 size=2 type=6 nowait noerror -> type=6 text=bc
msgrcv msg h2 size=8 type=0 nowait -> type=5 text=abc
msgrcv msg h2 size=8 type=0 nowait -> ENOMSG
msgrcv msg h2 size=-1 type=0 nowait -> EINVAL
`)
}

// msgctl by index and the info commands; the /proc rows and Snapshot.Queues
// show messages and sleepers.
func TestMsgctlAndSnapshot(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
h2 = get msg key=0x2a creat mode=0644 -> id=1
msgsnd msg h2 type=3 size=4 fill=0 task=t1 -> ok
msgsnd msg h2 type=4 size=2 fill=5 nowait -> ok
msgrcv msg h1 size=8 type=9 task=t2 -> blocked
msgctl msg h2 set qbytes=6 mode=0644 -> ok
msgsnd msg h2 type=1 size=1 fill=0 task=t3 -> blocked
msgctl msg id=1 msg_stat -> ret=1 {0x2a 1 644 6 2 t0 0 0 0 0 0 * 0 *} qbytes=6
msgctl msg id=1 msg_stat_any as=1000 -> ret=1 {0x2a 1 644 6 2 t0 0 0 0 0 0 * 0 *} qbytes=6
msgctl msg id=0 msg_stat as=1000 -> EACCES
msgctl msg id=5 msg_stat -> EINVAL
msgctl msg h1 ipc_info -> ret=1 msgpool=512000 msgmap=16384 msgmax=8192 msgmnb=16384 msgmni=32000 msgssz=16 msgtql=16384 msgseg=65535
msgctl msg h1 msg_info -> ret=1 msgpool=2 msgmap=2 msgmax=8192 msgmnb=16384 msgmni=32000 msgssz=16 msgtql=6 msgseg=65535
msgctl msg h1 set qbytes=100 mode=0600 as=1000 -> EPERM
list msg rows -> [0x0 0 600 0 0 0 0 0 0 0 0 0 0 * | 0x2a 1 644 6 2 t0 0 0 0 0 0 * 0 *]
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.QueueState{
		{ID: 0, Qbytes: 16384, Receivers: []uint8{2}},
		{ID: 1, Qbytes: 6, Msgs: []ops.Message{{Type: 3, Text: "abcd"}, {Type: 4, Text: "fg"}}, Senders: []uint8{3}},
	}, s.Queues)
	require.Equal(t, ops.TaskPID(0, 0), s.Rows[ops.Msg][1].Cpid, "lspid: t0, the last sender")
	// The snapshot changed nothing (MSG_COPY leaves rtime and lrpid).
	r := apply(t, m, ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{ID: 1}, Size: 8, Task: 4})
	require.Equal(t, ops.Message{Type: 3, Text: "abcd"}, r.Msg)
	require.Equal(t, []ops.Completion{{Task: 3}}, r.Done, "t3's 1 byte fits once 4 left")
	r = apply(t, m, ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{ID: 1}, MCmd: ops.MsgIPCStat})
	require.Equal(t, ops.Row{Key: 42, Mode: 0o644, Size: 3, Qnum: 2, Cpid: ops.TaskPID(3, 0), Lpid: ops.TaskPID(4, 0), Atime: true, Dtime: true, Ctime: true}, r.Row)
	s = snapshot(t, m)
	require.Equal(t, r.Row, withID(s.Rows[ops.Msg][1], 0), "/proc/sysvipc/msg maps pids the same way")
}

func withID(r ops.Row, id int64) ops.Row { r.ID = id; return r }

// Reset wakes task processes that sleep in msgrcv and msgsnd (they are
// reused by the next script), and Close ends them.
func TestMsgSleepersEndWithResetAndClose(t *testing.T) {
	m := newModel(t)
	me := os.Getpid()
	sleepers := `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=0 mode=0600 -> ok
msgrcv msg h1 size=8 type=0 task=t1 -> blocked
msgsnd msg h1 type=1 size=1 fill=0 task=t2 -> blocked
`
	runScript(t, m, sleepers)
	first := modelTasks(m)
	require.Len(t, first, 2)
	require.NoError(t, m.Reset(ops.Config{}))
	runScript(t, m, sleepers)
	require.Equal(t, first, modelTasks(m), "the same processes, woken at Reset")
	require.NoError(t, m.Close())
	require.Empty(t, taskProcesses(t, me))
}

// kernel-probe B1: qbytes 100, full with 50+50; senders of 60, 30 and 40;
// one receive frees 50, which wakes both t2 and t3 (each fits on its own);
// whichever takes the lock first gets in and the other goes back to sleep.
// This documents the nondeterminism: the completion set is one of the
// allowed ones, never which.
func TestMsgRaceB1(t *testing.T) {
	m := newModel(t)
	seen := map[string]int{}
	for range 20 {
		res := runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=100 mode=0600 -> ok
msgsnd msg h1 type=1 size=50 fill=0 nowait -> ok
msgsnd msg h1 type=1 size=50 fill=1 nowait -> ok
msgsnd msg h1 type=2 size=60 fill=0 task=t1 -> blocked
msgsnd msg h1 type=3 size=30 fill=0 task=t2 -> blocked
msgsnd msg h1 type=4 size=40 fill=0 task=t3 -> blocked
msgrcv msg h1 size=64 type=0 nowait
`)
		last := res[len(res)-1]
		require.Equal(t, ops.Message{Type: 1, Text: ops.MsgText(0, 50)}, last.Msg)
		done := last.Done
		var tasks []string
		for _, c := range done {
			require.Equal(t, ops.OK, c.Err)
			tasks = append(tasks, fmt.Sprintf("t%d", c.Task))
		}
		key := "{" + strings.Join(tasks, ",") + "}"
		require.Contains(t, []string{"{t2}", "{t3}"}, key)
		seen[key]++
		s, err := m.Snapshot()
		require.NoError(t, err)
		q := s.Queues[0]
		require.Len(t, q.Msgs, 2)
		require.ElementsMatch(t, []uint8{1, 2, 3}, append(q.Senders, done[0].Task), "the loser sleeps again")
	}
	t.Logf("B1 completion sets over 20 runs: %v", seen)
}

// A blocked call that a later operation completes: the round trip of
// "t1 msgrcv -> blocked" and "t0 msgsnd -> ok ; t1 <message>".
func BenchmarkMsgBlockedRoundTrip(b *testing.B) {
	m := newModel(b)
	id := create(b, m, private(ops.Msg))
	rcv := ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{ID: id}, Size: 8, Task: 1}
	snd := ops.Op{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ops.Ref{ID: id}, Mtype: 1, Size: 4, MsgFlags: ops.MsgNowait}
	var blockNs, wakeNs time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if r := apply(b, m, rcv); !r.Blocked {
			b.Fatalf("msgrcv did not block: %+v", r)
		}
		t1 := time.Now()
		if r := apply(b, m, snd); len(r.Done) != 1 || !r.Done[0].Recv {
			b.Fatalf("msgsnd did not complete t1: %+v", r)
		}
		blockNs += t1.Sub(t0)
		wakeNs += time.Since(t1)
	}
	b.ReportMetric(float64(blockNs.Nanoseconds())/float64(b.N), "block-ns/op")
	b.ReportMetric(float64(wakeNs.Nanoseconds())/float64(b.N), "complete-ns/op")
}

// The cost every operation pays for settling sleeping tasks: IPC_STAT with
// 0 and with 4 tasks asleep in msgrcv.
func BenchmarkMsgOpWithSleepers(b *testing.B) {
	for _, n := range []int{0, ops.MaxTask} {
		b.Run(fmt.Sprintf("sleepers=%d", n), func(b *testing.B) {
			m := newModel(b)
			id := create(b, m, private(ops.Msg))
			for task := 1; task <= n; task++ {
				r := apply(b, m, ops.Op{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ops.Ref{ID: id}, Size: 8, Task: uint8(task)})
				require.True(b, r.Blocked)
			}
			st := ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ops.Ref{ID: id}, MCmd: ops.MsgIPCStat}
			b.ResetTimer()
			for range b.N {
				if r := apply(b, m, st); r.Err != ops.OK || len(r.Done) != 0 {
					b.Fatalf("stat: %+v", r)
				}
			}
		})
	}
}
