//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// A sleeper workload larger than the host allows is refused in one line
// before anything starts, and leaves no thread behind.
func TestSleeperWorkloadRefusedBeyondHost(t *testing.T) {
	m := newModel(t)
	room, why := threadRoom()
	require.NotEmpty(t, why)
	for _, w := range []ops.Workload{ops.MsgFullQueue, ops.MsgPingPong} {
		_, err := m.Measure(ops.Config{}, w, int(room)+1, 1)
		require.Error(t, err, "%s at n=%d", w, room+1)
		require.NotContains(t, err.Error(), "\n")
		require.Contains(t, err.Error(), "this host allows")
		require.Less(t, len(err.Error()), 300)
	}
	require.Empty(t, threadsAsleepIn("do_msgsnd"))
	require.Empty(t, threadsAsleepIn("do_msgrcv"))
}

// A sleeper workload leaves no thread behind: removing the queue wakes the
// sleepers, and their threads end.
func TestFullQueueLeavesNoThread(t *testing.T) {
	m := newModel(t)
	res, err := m.Measure(ops.Config{}, ops.MsgFullQueue, 64, 1)
	require.NoError(t, err)
	require.Len(t, res.WallNs, 1)
	require.Empty(t, threadsAsleepIn("do_msgsnd"), "IPC_RMID woke every sender")
}

// msg-full-queue counts the senders' context switches: on this machine's
// kernel (>= 4.9) a receive that frees 8 bytes wakes none of the 16-byte
// senders, and a signal to each sender is counted as one wake-up of each
// (it sleeps again in msgsnd).
func TestFullQueueCountsSenderWakeups(t *testing.T) {
	m := newModel(t)
	const n = 8
	res, err := m.Measure(ops.Config{}, ops.MsgFullQueue, n, 2)
	require.NoError(t, err)
	require.Equal(t, int64(ops.MsgRounds), res.Counters["receives"], "receives per repetition")
	require.Zero(t, res.Counters["wakeups"], "no sender woken by a receive that frees too little")
	require.GreaterOrEqual(t, res.Counters["ctxt_switches"], res.Counters["wakeups"])

	var r run
	onWorker(m, func() {
		m.n.dirty = true
		r, err = fullQueue(n)
	})
	require.NoError(t, err)
	defer onWorker(m, r.teardown)
	before, err := r.probe()
	require.NoError(t, err)
	senders := threadsAsleepIn("do_msgsnd")
	require.Len(t, senders, n)
	for _, s := range senders {
		tid, err := strconv.Atoi(s)
		require.NoError(t, err)
		require.NoError(t, unix.Tgkill(os.Getpid(), tid, unix.SIGURG))
	}
	after, err := r.probe()
	require.NoError(t, err)
	woken := after["wakeups"] - before["wakeups"]
	require.GreaterOrEqual(t, woken, int64(n), "each signalled sender woke and slept again")
	require.GreaterOrEqual(t, after["ctxt_switches"]-before["ctxt_switches"], woken)
	require.Equal(t, before["receives"], after["receives"])
}

// threadsAsleepIn lists the threads of this process asleep in the kernel
// function wchan.
func threadsAsleepIn(wchan string) []string {
	ents, _ := os.ReadDir("/proc/self/task")
	var out []string
	for _, e := range ents {
		w, err := os.ReadFile("/proc/self/task/" + e.Name() + "/wchan")
		if err == nil && string(w) == wchan {
			out = append(out, e.Name())
		}
	}
	return out
}

// childrenAsleepIn lists the child processes of this process (or of any
// of its threads) whose wchan is wchan; "" lists every child.
func childrenAsleepIn(wchan string) []string {
	var out []string
	for _, p := range testkit.Children(os.Getpid()) {
		w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p.PID))
		if wchan == "" || string(w) == wchan {
			out = append(out, strconv.Itoa(p.PID))
		}
	}
	return out
}

// The machine facts report the largest shm segment shmget grants with the heuristic
// overcommit, and shmget agrees: that many pages are granted, one more is
// ENOMEM.
func TestShmMaxPages(t *testing.T) {
	mode, err := readProcInt("/proc/sys/vm/overcommit_memory")
	require.NoError(t, err)
	pages, ok := machineFacts().ShmMaxPages()
	if mode != 0 {
		require.False(t, ok)
		t.Skipf("vm.overcommit_memory is %d: no fixed limit to check", mode)
	}
	require.True(t, ok)
	m := newModel(t)
	page := int64(unix.Getpagesize())
	for _, c := range []struct {
		pages int64
		want  ops.Errno
	}{{pages, ops.OK}, {pages + 1, ops.ENOMEM}} {
		op := ops.Op{Kind: ops.KindGet, Type: ops.Shm, Key: ops.IPCPrivate, Creat: true, Mode: 0o600, Size: c.pages * page}
		r := apply(t, m, op)
		require.Equal(t, c.want, r.Err, "%d pages", c.pages)
		if r.Err == ops.OK {
			require.Equal(t, ops.OK, apply(t, m, rmid(ops.Shm, r.ID)).Err)
		}
	}
}

// sem-sleepers: every round completes exactly the one sleeper on its
// semaphore, which is asleep again before the next round; at teardown every
// sleeper returns and its thread ends.
func TestSemSleepers(t *testing.T) {
	m := newModel(t)
	const n = 16
	var part func() error
	var teardown func()
	var err error
	before := childrenAsleepIn("")
	onWorker(m, func() {
		m.n.dirty = true
		part, teardown, err = semSleepers(m.n.tasks.pool.Bin(), n, 3*n)
	})
	require.NoError(t, err)
	// GETNCNT counts a sleeper from the moment it is queued, a moment
	// before it is scheduled out and its wchan names the semop: wait for
	// the wchan, since the setup's evidence is the count.
	asleep := childrenAsleepIn("__do_semtimedop")
	for deadline := time.Now().Add(10 * time.Second); len(asleep) != n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		asleep = childrenAsleepIn("__do_semtimedop")
	}
	require.Len(t, asleep, n, "n sleeper processes asleep in semop")
	onWorker(m, func() { err = part() })
	require.NoError(t, err)
	var ncnt, vals []int64
	var errno unix.Errno
	onWorker(m, func() {
		for i := range n {
			for cmd, out := range map[int]*[]int64{semGetNcnt: &ncnt, semGetVal: &vals} {
				r, _, e := unix.Syscall6(unix.SYS_SEMCTL, 0, uintptr(i), uintptr(cmd), 0, 0, 0)
				errno = max(errno, e)
				*out = append(*out, int64(r))
			}
		}
		teardown()
	})
	require.Zero(t, errno)
	require.Equal(t, slicesRepeat(1, n), ncnt, "every sleeper asleep again")
	require.Equal(t, slicesRepeat(0, n), vals, "every +1 taken by its sleeper")
	require.Equal(t, before, childrenAsleepIn(""), "teardown ended every sleeper")
	require.NoError(t, m.Reset(ops.Config{}))
}

func slicesRepeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// semop-depth: the two arrays sit at idx 1 and idx k, and the no-op semops
// succeed; an idx out of range is refused.
func TestSemopDepth(t *testing.T) {
	m := newModel(t)
	for _, k := range []int{2, 40, 3348, 27348} {
		require.NoError(t, m.Reset(ops.Config{}))
		var part func() error
		var err error
		onWorker(m, func() {
			m.n.dirty = true
			if part, err = semopDepth(k, 1000); err == nil {
				err = part()
			}
		})
		require.NoError(t, err, "k=%d", k)
		rows := snapshot(t, m).Rows[ops.Sem]
		require.Len(t, rows, 2)
		require.Equal(t, []int{1, k}, []int{ops.IDIdx(rows[0].ID), ops.IDIdx(rows[1].ID)})
		require.True(t, rows[0].Atime && rows[1].Atime, "each array saw a semop")
	}
	var err error
	onWorker(m, func() { _, err = semopDepth(ops.IPCMNI, 1) })
	require.Error(t, err)
}

// Every workload of the IPC subsystems runs at a small size, and leaves
// nothing behind.
func TestEveryWorkloadRuns(t *testing.T) {
	m := newModel(t)
	before := childrenAsleepIn("")
	for _, w := range ops.Workloads {
		if ops.WorkloadSubsystem(w) == "vma" {
			continue
		}
		res, err := m.Measure(ops.Config{}, w, 4, 2)
		require.NoError(t, err, w)
		require.Len(t, res.WallNs, 2, w)
	}
	require.Empty(t, threadsAsleepIn("do_msgsnd"))
	require.Empty(t, threadsAsleepIn("do_msgrcv"))
	require.Equal(t, before, childrenAsleepIn(""), "no sleeper process left")
}
