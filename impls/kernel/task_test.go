//go:build linux && amd64

package kernel

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// taskProcesses lists the live (not zombie) task processes whose parent is
// ppid (any parent if ppid is 0): the tasks of every model, and their
// spares.
func taskProcesses(t testing.TB, ppid int) []int {
	procs, err := testkit.Procs()
	require.NoError(t, err)
	var out []int
	for _, p := range procs {
		if liveTask(p.PID) && (ppid == 0 || p.PPID == ppid) {
			out = append(out, p.PID)
		}
	}
	return out
}

// liveTask reports whether pid is alive (not a zombie) and a task process
// (by its argv[0]).
func liveTask(pid int) bool {
	return testkit.Running(pid) && strings.HasPrefix(testkit.Cmdline(pid), "ipcfuzz-task")
}

func startTasks(t testing.TB, m *Model) {
	r := apply(t, m, ops.Op{Kind: ops.KindGet, Type: ops.Shm, Bind: 1, Mode: 0o600, Size: 4096})
	require.Equal(t, ops.OK, r.Err)
	for n := 1; n <= ops.MaxTask; n++ {
		r := apply(t, m, ops.Op{Kind: ops.KindShmat, Type: ops.Shm, Obj: ops.Ref{ID: r.ID}, Att: n, Task: uint8(n)})
		require.Equal(t, ops.OK, r.Err)
	}
}

// modelTasks lists the pids of m's task processes (spares not included).
func modelTasks(m *Model) []int {
	var out []int
	onWorker(m, func() {
		for n := range ops.NumTasks {
			if p := m.n.tasks.pool.Proc(n); p != nil {
				out = append(out, p.Pid())
			}
		}
	})
	return out
}

// Task processes outlive a Reset and are reused by the next script (the
// same processes), an exit op reaps its task, and Close ends them all,
// spares included.
func TestTasksReusedAndEndWithClose(t *testing.T) {
	m := newModel(t)
	me := os.Getpid()
	require.Empty(t, taskProcesses(t, me))
	startTasks(t, m)
	first := modelTasks(m)
	require.Len(t, first, ops.MaxTask)
	require.Subset(t, taskProcesses(t, me), first)
	apply(t, m, ops.Op{Kind: ops.KindExit, Task: 2})
	require.Len(t, modelTasks(m), ops.MaxTask-1)
	require.NotContains(t, taskProcesses(t, me), first[1], "t2's process is gone")
	require.NoError(t, m.Reset(ops.Config{}))
	require.Len(t, modelTasks(m), ops.MaxTask-1, "Reset keeps the task processes")
	startTasks(t, m)
	second := modelTasks(m)
	require.Len(t, second, ops.MaxTask)
	require.Len(t, intersect(first, second), ops.MaxTask-1, "the same processes serve t1, t3 and t4 again")
	require.NoError(t, m.Close())
	require.Empty(t, taskProcesses(t, me))
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// hostEnv makes the test binary a model host for TestTasksDieWithKilledHost.
const hostEnv = "IPCFUZZ_TEST_TASK_HOST"

func init() {
	if os.Getenv(hostEnv) != "" {
		os.Exit(hostTasks())
	}
}

// hostTasks starts a model with every task running, says so on stdout and
// waits to be killed. With hostEnv=msg, t1 sleeps in msgrcv and t2 in
// msgsnd; t3 and t4 are attached to a segment as with hostEnv=shm.
func hostTasks() int {
	mm, err := New()
	if err != nil {
		fmt.Println("skip:", err)
		return 0
	}
	m := mm.(*Model)
	first := 1
	if os.Getenv(hostEnv) == "msg" {
		if err := hostMsgSleepers(m); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		first = 3
	}
	r, err := m.Apply(ops.Op{Kind: ops.KindGet, Type: ops.Shm, Bind: 1, Mode: 0o600, Size: 4096})
	if err != nil || r.Err != ops.OK {
		fmt.Println("error:", err, r.Err)
		return 1
	}
	for n := first; n <= ops.MaxTask; n++ {
		if _, err := m.Apply(ops.Op{Kind: ops.KindShmat, Type: ops.Shm, Obj: ops.Ref{ID: r.ID}, Att: n, Task: uint8(n)}); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	fmt.Println("ready")
	select {}
}

// hostMsgSleepers puts t1 to sleep in msgrcv and t2 in msgsnd.
func hostMsgSleepers(m *Model) error {
	r, err := m.Apply(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Mode: 0o600})
	if err != nil || r.Err != ops.OK {
		return fmt.Errorf("msgget: %v %v", err, r.Err)
	}
	q := ops.Ref{ID: r.ID}
	for _, op := range []ops.Op{
		{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: q, MCmd: ops.MsgIPCSet, Value: 0, Mode: 0o600},
		{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: q, Size: 8, Task: 1},
		{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: q, Mtype: 1, Size: 1, Task: 2},
	} {
		r, err := m.Apply(op)
		if err != nil || r.Err != ops.OK || (op.Task != 0) != r.Blocked {
			return fmt.Errorf("%s: %v %+v", ops.FormatOp(op), err, r)
		}
	}
	return nil
}

// The task processes die with the process hosting the model, even when it
// is killed with SIGKILL and cleans nothing up: their parent-death signal.
func TestTasksDieWithKilledHost(t *testing.T) { testTasksDieWithKilledHost(t, "shm") }

// The same for tasks asleep in msgrcv and msgsnd; and with the last task
// gone, no process is left in the model's IPC namespace.
func TestMsgSleepersDieWithKilledHost(t *testing.T) { testTasksDieWithKilledHost(t, "msg") }

func testTasksDieWithKilledHost(t *testing.T, mode string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	// Whatever fails below, the host goes (its tasks with it).
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	if strings.HasPrefix(line, "skip:") {
		_ = cmd.Wait()
		t.Skip(line)
	}
	require.Equal(t, "ready\n", line)
	host := cmd.Process.Pid
	tasks := taskProcesses(t, host)
	require.GreaterOrEqual(t, len(tasks), ops.MaxTask, "the tasks, and any spare started so far")
	var nss []string
	for _, p := range tasks {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/ipc", p))
		require.NoError(t, err)
		if !slices.Contains(nss, ns) {
			nss = append(nss, ns)
		}
	}
	if mode == "msg" {
		var asleep []string // the syscall each sleeps in
		for _, p := range tasks {
			sc, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", p))
			require.NoError(t, err)
			nr, _, _ := strings.Cut(string(sc), " ")
			asleep = append(asleep, nr)
		}
		require.Subset(t, asleep, []string{strconv.Itoa(unix.SYS_MSGRCV), strconv.Itoa(unix.SYS_MSGSND)})
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	// The kernel delivers the signal as the host's threads exit; wait for
	// it, with a generous bound that only a task that never dies reaches.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var left []int
		for _, p := range tasks {
			if liveTask(p) {
				left = append(left, p)
			}
		}
		// A dead process's other threads may still be on their way out:
		// wait for the namespace to empty too, within the same bound.
		var threads []string
		for _, ns := range nss {
			threads = append(threads, threadsIn(t, ns)...)
		}
		if len(left) == 0 && len(threads) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task processes %v (threads %v in the namespaces %v) outlived their killed host", left, threads, nss)
		}
	}
}

// threadsIn lists the threads (pid/tid) whose IPC namespace is ns.
func threadsIn(t testing.TB, ns string) []string {
	pids, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	require.NoError(t, err)
	var out []string
	for _, p := range pids {
		if l, err := os.Readlink(p + "/ns/ipc"); err == nil && l == ns {
			out = append(out, strings.TrimPrefix(p, "/proc/"))
		}
	}
	return out
}

// A task shares the process group of the process that started it, so a
// signal to the whole group (Ctrl-C in a terminal, timeout -s INT around a
// fuzz run) reaches it too: it must not end it in the middle of a script,
// where the next call would fail with a broken pipe (a nightly fuzz shard
// reported exactly that as a finding). SIGKILL still ends it.
func TestTasksOutliveJobControlSignals(t *testing.T) {
	m := newModel(t)
	startTasks(t, m)
	pids := modelTasks(m)
	require.Len(t, pids, ops.MaxTask)
	for _, pid := range pids {
		ign := testkit.SigIgn(t, pid)
		for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGPIPE, unix.SIGTERM} {
			require.NotZero(t, ign&(1<<(sig-1)), "task %d does not ignore %v", pid, sig)
			require.NoError(t, unix.Kill(pid, sig))
		}
	}
	for n := 1; n <= ops.MaxTask; n++ {
		r := apply(t, m, ops.Op{Kind: ops.KindGet, Type: ops.Shm, Mode: 0o600, Size: 4096, Task: uint8(n)})
		require.Equal(t, ops.OK, r.Err, "t%d after the signals", n)
	}
	require.Equal(t, pids, modelTasks(m), "the same processes still serve the tasks")
}

// A fork into a slot whose process has run nothing in this namespace (it
// served an earlier script) kills that process without waiting for its
// end (Pool.retire): it is reaped in the background, and Close waits for
// it, so no process is left.
func TestForkRetiresTheSlotsEarlierProcess(t *testing.T) {
	if _, err := task.Server(); err != nil {
		t.Skipf("fork_task needs the C task server: %v", err)
	}
	m := newModel(t)
	runScripts(t, m, `subsystem shm
get shm key=0x0 mode=0600 size=4096 task=t2 -> id=0
`)
	old := modelTasks(m)
	require.Len(t, old, 1)
	runScripts(t, m, `subsystem shm
get shm key=0x0 mode=0600 size=4096 task=t1 -> id=0
fork_task task=t1 child=t2 -> ok
get shm key=0x0 mode=0600 size=4096 task=t2 -> id=1
`)
	require.NotContains(t, modelTasks(m), old[0])
	require.NoError(t, m.Close())
	_, err := os.Stat("/proc/" + itoa(int64(old[0])))
	require.ErrorIs(t, err, os.ErrNotExist, "the replaced process of t2 is left after Close")
}
