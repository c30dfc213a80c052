//go:build linux && amd64

package kernel

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Every semctl command on the kernel, each result stated (ipc-spec §3.7).
func TestSemctlCommands(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x2a creat mode=0640 size=3 -> id=0
semctl sem h1 setval num=1 val=7 -> ok
semctl sem h1 getval num=1 -> ret=7
semctl sem h1 getval num=3 -> EINVAL
semctl sem h1 getval num=-1 -> EINVAL
semctl sem h1 getpid num=1 -> pid=t0
semctl sem h1 getpid num=0 -> pid=0
semctl sem h1 setval num=0 val=32768 -> ERANGE
semctl sem id=99 setval num=0 val=-1 -> ERANGE
semctl sem h1 setall vals=1,2 task=t2 -> ok
semctl sem h1 getall -> [1 2 0]
semctl sem h1 getpid num=2 -> pid=t2
semctl sem h1 setall vals=1,40000 -> ERANGE
semctl sem h1 getall task=t3 -> [1 2 0]
semctl sem h1 getncnt num=0 -> ret=0
semctl sem h1 getzcnt num=2 -> ret=0
semctl sem h1 getall as=1000 -> EACCES
semctl sem h1 stat -> ret=0 {0x2a 0 640 3 0 0 0 0 0 *}
semctl sem id=0 sem_stat -> ret=0 {0x2a 0 640 3 0 0 0 0 0 *}
semctl sem id=0 sem_stat as=1000 -> EACCES
semctl sem id=0 sem_stat_any as=1000 -> ret=0 {0x2a 0 640 3 0 0 0 0 0 *}
semctl sem h1 set owner=1000 mode=0604 -> ok
semctl sem h1 stat as=1000 -> ret=0 {0x2a 0 604 3 1000 1000 0 0 0 *}
semctl sem h1 set owner=4294967295 mode=0600 -> EINVAL
semctl sem h1 set owner=0 mode=0600 as=2000 -> EPERM
semctl sem id=0 ipc_info -> ret=0 semmap=1024000000 semmni=32000 semmns=1024000000 semmnu=1024000000 semmsl=32000 semopm=500 semume=500 semusz=20 semvmx=32767 semaem=32767
semctl sem id=0 sem_info -> ret=0 semmap=1024000000 semmni=32000 semmns=1024000000 semmnu=1024000000 semmsl=32000 semopm=500 semume=500 semusz=1 semvmx=32767 semaem=3
semop sem h1 0:-1:nowait -> ok
semctl sem h1 stat -> ret=0 {0x2a 0 604 3 1000 1000 0 0 * *}
rmid sem h1 -> ok
semctl sem h1 getval num=0 -> EINVAL
`)
}

// GETALL and SETALL of an array larger than any fixed buffer, by a task.
func TestSemLargeArrayByTask(t *testing.T) {
	m := newModel(t)
	r := apply(t, m, ops.Op{Kind: ops.KindGet, Type: ops.Sem, Key: ops.IPCPrivate, Creat: true, Mode: 0o600, Size: 1000})
	require.Equal(t, ops.OK, r.Err)
	id := r.ID
	set := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{ID: id}, Task: 1}
	set.Sem.Cmd, set.Sem.NVals = ops.SemSetAll, 2
	set.Sem.Vals[0], set.Sem.Vals[1] = 5, 6
	require.Equal(t, ops.OK, apply(t, m, set).Err)
	get := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{ID: id}, Task: 2}
	get.Sem.Cmd = ops.SemGetAll
	r = apply(t, m, get)
	require.Equal(t, ops.OK, r.Err)
	want := make([]int64, 1000)
	want[0], want[1] = 5, 6
	require.Equal(t, want, r.Sem.Vals)
	s := snapshot(t, m)
	require.Len(t, s.Sems, 1)
	require.Equal(t, want, s.Sems[0].Vals)
	require.Equal(t, ops.TaskPID(1, 0), s.Sems[0].Pids[999], "SETALL sets every sempid to the caller")
}

// kernel-probe §4 C1-C3 and ipc-spec §3.6: FIFO among sleepers that can
// run, no starvation protection, and one increment that completes three.
func TestSemWakeOrder(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=1 -> id=0
semop sem h1 0:-1 task=t1 -> blocked
semop sem h1 0:-1 task=t2 -> blocked
semop sem h1 0:-1 task=t3 -> blocked
semctl sem h1 getncnt num=0 -> ret=3
semop sem h1 0:+1:nowait -> ok ; t1 ok
semop sem h1 0:+1:nowait -> ok ; t2 ok
semop sem h1 0:+1:nowait -> ok ; t3 ok
semop sem h1 0:-2 task=t1 -> blocked
semop sem h1 0:-1 task=t2 -> blocked
semop sem h1 0:-1 task=t3 -> blocked
semop sem h1 0:+1:nowait -> ok ; t2 ok
semop sem h1 0:+3:nowait -> ok ; t1 ok ; t3 ok
semctl sem h1 getpid num=0 -> pid=t3
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.SemState{{ID: 0, Vals: []int64{0}, Pids: []ops.PID{ops.TaskPID(3, 0)}, Ncnt: []int64{0}, Zcnt: []int64{0}}}, s.Sems,
		"the waker runs the sleepers' operations in queue order; the last one's pid stays")
}

// ipc-spec §3.6 [verified]: a complex op C{s0-1, s1-1} and a simple S{s0-1};
// s0+1 completes S, and C, re-evaluated, blocks on s0: GETNCNT(0)=1,
// GETNCNT(1)=0. Then zero-waiters are served before the alter pass.
func TestSemComplexAndZeroWaiters(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=2 -> id=0
semop sem h1 0:-1,1:-1 task=t1 -> blocked
semop sem h1 0:-1 task=t2 -> blocked
semop sem h1 0:+1:nowait -> ok ; t2 ok
semctl sem h1 getncnt num=0 -> ret=1
semctl sem h1 getncnt num=1 -> ret=0
semop sem h1 1:+1:nowait -> ok
semctl sem h1 getncnt num=0 -> ret=1
semop sem h1 0:+1:nowait -> ok ; t1 ok
semctl sem h1 setall vals=1,0 -> ok
semop sem h1 0:0 task=t3 -> blocked
semop sem h1 1:-1,0:+1 task=t4 -> blocked
semctl sem h1 getzcnt num=0 -> ret=1
semctl sem h1 getncnt num=1 -> ret=1
semop sem h1 0:-1:nowait,1:+1:nowait -> ok ; t3 ok ; t4 ok
semctl sem h1 getall -> [1 0]
`)
}

// SEM_UNDO applied at a task's real exit, clamped (ipc-spec §3.8), SETVAL
// wiping the adjustment, and IPC_RMID waking every sleeper with EIDRM.
func TestSemUndoExitAndRmid(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=2 -> id=0
semop sem h1 0:+3:undo task=t1 -> ok
semop sem h1 0:-2:nowait -> ok
exit task=t1 -> ok
semctl sem h1 getall -> [0 0]
semctl sem h1 getpid num=0 -> pid=t1
semop sem h1 1:-1 task=t2 -> blocked
semop sem h1 1:+2:undo task=t1 -> ok ; t2 ok
semctl sem h1 getpid num=1 -> pid=t2
semop sem h1 0:-1 task=t2 -> blocked
exit task=t1 -> ok
semctl sem h1 getall -> [0 0]
semctl sem h1 getpid num=1 -> pid=t1#1
semop sem h1 1:+5:undo task=t3 -> ok
semctl sem h1 setval num=1 val=1 -> ok
exit task=t3 -> ok
semctl sem h1 getall -> [0 1]
semop sem h1 1:0 task=t4 -> blocked
rmid sem h1 -> ok ; t2 EIDRM ; t4 EIDRM
`)
}

// interrupt: a task asleep in semop, msgsnd or msgrcv returns EINTR; a task
// that does not sleep (or never ran) is not disturbed.
func TestInterrupt(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=1 -> id=0
interrupt task=t1 -> ok
semop sem h1 0:+1 task=t1 -> ok
interrupt task=t1 -> ok
semop sem h1 0:-2 task=t2 -> blocked
interrupt task=t2 -> ok ; t2 EINTR
semctl sem h1 getncnt num=0 -> ret=0
semop sem h1 0:-1 task=t2 -> ok
`)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgctl msg h1 set qbytes=0 mode=0600 -> ok
msgrcv msg h1 size=8 type=0 task=t1 -> blocked
msgsnd msg h1 type=1 size=1 fill=0 task=t2 -> blocked
interrupt task=t1 -> ok ; t1 EINTR
interrupt task=t2 -> ok ; t2 EINTR
interrupt task=t3 -> ok
`)
}

// semtimedop: a zero timeout sleeps no time (EAGAIN, even by t0), invalid
// timespecs give EINVAL (ipc-spec §3.3).
func TestSemTimeouts(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=1 -> id=0
semop sem h1 0:-1 timeout=zero -> EAGAIN
semop sem h1 0:-1 timeout=zero task=t1 -> EAGAIN
semop sem h1 0:+1 timeout=zero task=t1 -> ok
semop sem h1 0:-1 timeout=zero task=t2 -> ok
semop sem h1 0:-1 timeout=bad_nsec task=t1 -> EINVAL
semop sem h1 0:-1 timeout=negative -> EINVAL
semctl sem h1 getncnt num=0 -> ret=0
`)
}

// sem_limits: root writes kernel.sem, a user may not; a semmni out of
// range gives ERANGE and only semmni keeps its old value
// (ipc/ipc_sysctl.c, proc_ipc_sem_dointvec).
func TestSemLimits(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
sem_limits sem semmsl=10 semmns=20 semopm=2 semmni=5 -> ok
sem_limits sem semmsl=1 semmns=1 semopm=1 semmni=1 as=1000 -> EACCES
h1 = get sem key=0x0 mode=0600 size=11 -> EINVAL
h2 = get sem key=0x0 mode=0600 size=10 -> id=0
semop sem h2 0:+1:nowait,1:+1:nowait,2:+1:nowait -> E2BIG
sem_limits sem semmsl=11 semmns=21 semopm=3 semmni=32769 -> ERANGE
`)
	require.Equal(t, ops.SemLimits{Semmsl: 11, Semmns: 21, Semopm: 3, Semmni: 5, UsedSems: 10}, snapshot(t, m).SemLimits)
}

// The snapshot's limits come from IPC_INFO and SEM_INFO; they are what
// /proc/sys/kernel/sem shows in the same namespace.
func TestSemLimitsAreTheSysctl(t *testing.T) {
	m := newModel(t)
	for _, text := range []string{"semctl sem id=0 ipc_info -> ret=0 semmap=1024000000 semmni=32000 semmns=1024000000 semmnu=1024000000 semmsl=32000 semopm=500 semume=500 semusz=20 semvmx=32767 semaem=32767\n", "sem_limits sem semmsl=7 semmns=-3 semopm=0 semmni=9\n"} {
		runScript(t, m, "subsystem sem\n"+text)
		var file []byte
		var err error
		onWorker(m, func() { file, err = os.ReadFile("/proc/sys/kernel/sem") })
		require.NoError(t, err)
		l := snapshot(t, m).SemLimits
		f := strings.Fields(string(file))
		require.Equal(t, f, strings.Fields(strings.Join([]string{itoa(l.Semmsl), itoa(l.Semmns), itoa(l.Semopm), itoa(l.Semmni)}, " ")))
	}
}

// The snapshot names the tasks asleep on each array, and the listing's
// otime is set once any semaphore's is.
func TestSemSnapshot(t *testing.T) {
	m := newModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=2 -> id=0
h2 = get sem key=0x0 mode=0600 size=1 -> id=1
semop sem h1 1:-1 task=t3 -> blocked
semop sem h2 0:0 task=t2 -> ok
semop sem h1 1:+1:nowait -> ok ; t3 ok
semctl sem h1 getpid num=1 -> pid=t3
semop sem h1 0:-1 task=t4 -> blocked
semctl sem h1 setval num=1 val=1 -> ok
semop sem h1 1:0 task=t2 -> blocked
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.SemState{
		{ID: 0, Vals: []int64{0, 1}, Pids: []ops.PID{0, ops.TaskPID(0, 0)}, Ncnt: []int64{1, 0}, Zcnt: []int64{0, 1}, Sleepers: []uint8{2, 4}},
		{ID: 1, Vals: []int64{0}, Pids: []ops.PID{ops.TaskPID(2, 0)}, Ncnt: []int64{0}, Zcnt: []int64{0}},
	}, s.Sems)
	rows := s.Rows[ops.Sem]
	require.Len(t, rows, 2)
	require.True(t, rows[0].Atime, "otime: the array's semop by t0")
	require.True(t, rows[1].Atime, "otime: the wait-for-zero that succeeded")
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// A task process is reused by the next script and carries nothing over: a
// script leaves t1 with an attachment, a segment it created and a
// semaphore adjustment, t2 asleep in semop and t3 asleep in msgrcv; the
// next script, on the same processes, finds t1 attached to nothing, its
// old adjustment gone (the new array has the same id, so an undo entry
// that survived would be found and applied at exit), t2 and t3 idle, and
// every pid named after the first incarnation again.
func TestReusedTaskStartsClean(t *testing.T) {
	m := newModel(t)
	pids := func() (out [ops.NumTasks]int) {
		onWorker(m, func() {
			for n := range out {
				if p := m.n.tasks.pool.Proc(n); p != nil {
					out[n] = p.Pid()
				}
			}
		})
		return out
	}
	runScripts(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=4096 task=t1 -> id=0
a1 = shmat shm h1 task=t1 -> ok
`, `subsystem sem
h2 = get sem key=0x0 mode=0600 size=1 -> id=0
semop sem h2 0:+5:undo task=t1 -> ok
semop sem h2 0:-9 task=t2 -> blocked
`, `subsystem msg
h3 = get msg key=0x0 mode=0600 -> id=0
msgrcv msg h3 size=8 type=0 task=t3 -> blocked
`)
	before := pids()
	require.NotZero(t, before[1])
	s := snapshot(t, m)
	require.Len(t, s.Shm.Attachments, 1)
	runScripts(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=4096 -> id=0
`, `subsystem sem
semctl sem id=0 getall -> EINVAL
h2 = get sem key=0x0 mode=0600 size=1 -> id=0
semop sem h2 0:+2 task=t1 -> ok
semop sem h2 0:+1:undo task=t1 -> ok
semctl sem h2 getpid num=0 -> pid=t1
semop sem h2 0:-1 task=t2 -> ok
semctl sem h2 getncnt num=0 -> ret=0
exit task=t1 -> ok
semctl sem h2 getall -> [1]
`, `subsystem msg
h3 = get msg key=0x0 mode=0600 -> id=0
msgsnd msg h3 type=1 size=1 fill=0 task=t3 -> ok
`)
	after := pids()
	require.Equal(t, before[2:], after[2:], "t2..t4 are the same processes")
	s = snapshot(t, m)
	require.Empty(t, s.Shm.Attachments, "no attachment of the earlier script")
	require.Equal(t, []ops.Row{{Key: 0, ID: 0, Mode: 0o600, Size: 4096, Cpid: ops.TaskPID(0, 0), Ctime: true}}, s.Rows[ops.Shm])
	require.Equal(t, []ops.QueueState{{ID: 0, Qbytes: 16384, Msgs: []ops.Message{{Type: 1, Text: ops.MsgText(0, 1)}}}}, s.Queues, "t3 was not left asleep")
}

// runScripts resets m, then runs the scripts one after the other in the
// same namespace (their handles are shared), checking every stated result.
func runScripts(tb testing.TB, m *Model, texts ...string) {
	tb.Helper()
	require.NoError(tb, m.Reset(ops.Config{}))
	h := ops.Handles{}
	for _, text := range texts {
		s, err := ops.ParseString(text)
		require.NoError(tb, err)
		for i, st := range s.Steps {
			r := apply(tb, m, h.Resolve(st.Op))
			h.Record(st.Op, r)
			if st.Want != nil {
				require.Equal(tb, ops.FormatResult(st.Op, *st.Want), ops.FormatResult(st.Op, r), "step %d: %s", i+1, ops.FormatOp(st.Op))
			}
		}
	}
}
