package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// nsKillShm forks tasks and takes tasks into namespaces of their own
// (unshare, and setns into another task's), with segments and attachments
// there.
const nsKillShm = `subsystem shm
h1 = get shm key=0x7 creat mode=0600 size=4096
a1 = shmat shm h1 task=t1
fork_task task=t1 child=t2
unshare task=t3
h2 = get shm key=0x8 creat mode=0600 size=4096 task=t3
a2 = shmat shm h2 task=t3
fork_task task=t3 child=t5
setns task=t4 ns=t3
a3 = shmat shm h2 task=t4
unshare task=t1
h3 = get shm key=0x9 creat mode=0600 size=8192 task=t1
a4 = shmat shm h3 task=t1
shmctl shm h1 stat
`

// nsKillSem does the same with semaphore arrays, and leaves a forked
// child and a task asleep in semop in another namespace.
const nsKillSem = `subsystem sem
h1 = get sem key=0x1 creat mode=0600 size=1
unshare task=t1
h2 = get sem key=0x2 creat mode=0600 size=2 task=t1
fork_task task=t1 child=t2
setns task=t3 ns=t2
semop sem h2 0:-1 task=t2
semop sem h2 1:-1:undo task=t3
unshare task=t4
h3 = get sem key=0x0 mode=0600 size=1 task=t4
semop sem h3 0:+1:undo task=t4
`

// A host killed with SIGKILL in the middle of a replay whose tasks fork
// and go to IPC namespaces of their own leaves nothing behind: no process
// of the run (the plugins, the task processes, the forked ones: children
// of the plugin's worker thread by CLONE_PARENT, with its parent-death
// signal), no IPC namespace the run made (every one seen while it ran, by
// inode and, where the kernel tells it, by its never reused id), and the
// host's IPC namespace as it was. A script has one subsystem, and no shm
// call sleeps: the host is killed once in a long shm script, with forked
// tasks and tasks in namespaces of their own attached to segments there,
// and once in a long sem script, with a forked task and another asleep in
// semop in a namespace of their own.
func TestKillHostWithForkedTasks(t *testing.T) {
	t.Parallel()
	needKernel(t)
	t.Run("attached", func(t *testing.T) {
		t.Parallel()
		killMidRun(t, nsKillShm+strings.Repeat("shmctl shm h3 stat task=t1\n", 50000), func(v runView) bool { return v.attachedOutside })
	})
	t.Run("asleep", func(t *testing.T) {
		t.Parallel()
		killMidRun(t, nsKillSem+strings.Repeat("semctl sem h2 getncnt num=0 task=t1\n", 50000), func(v runView) bool { return v.asleepOutside })
	})
}

// killMidRun replays script on two kernel sides, kills the host with
// SIGKILL once a forked task is alive and the run is as ready says, and
// checks that nothing of the run is left.
func killMidRun(t *testing.T, script string, ready func(runView) bool) {
	file := filepath.Join(t.TempDir(), "long.ops")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	before := hostIPC(t)
	self := nsOf(t, "/proc/self/ns/ipc")
	cmd := exec.Command(bin, "replay", "--impls", "kernel,kernel", file)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	host := cmd.Process.Pid

	var v runView
	made := map[nsID]bool{}
	require.Eventually(t, func() bool {
		v = viewRun(host, self)
		for id := range v.spaces {
			made[id] = true
		}
		// Both sides' workers and the tasks' own namespaces: the
		// script's later tasks unshare after the first sleeps, and the
		// two sides go at their own pace.
		return len(v.forked) > 0 && ready(v) && len(made) > 4
	}, time.Minute, 5*time.Millisecond, "the run never got there: %s", &out)
	require.NotEmpty(t, heldNamespaces(made), "the check sees the namespaces of a live run")
	require.NoError(t, syscall.Kill(host, syscall.SIGKILL))
	_ = cmd.Wait()

	require.Eventually(t, func() bool {
		for pid := range v.procs {
			if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && !bytes.Contains(stat, []byte(") Z")) {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "processes of the killed host are still alive: %v", v.procs)
	// The kernel frees a namespace once its last user is gone: wait for
	// that, then say which are still held.
	held := heldNamespaces(made)
	for deadline := time.Now().Add(30 * time.Second); len(held) > 0 && time.Now().Before(deadline); held = heldNamespaces(made) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Empty(t, held, "IPC namespaces of the killed run are still held")
	require.Equal(t, before, hostIPC(t), "the host's IPC namespace changed")
}

// nsID names an IPC namespace: its inode, and its id (NS_GET_ID, never
// reused; 0 where the kernel does not tell it). An inode is reused as soon
// as its namespace is freed.
type nsID struct{ ino, id uint64 }

// nsGetID is NS_GET_ID, _IOR(0xb7, 13, __u64).
const nsGetID = 0x8008b70d

// nsAt names the namespace at path (a /proc/.../ns/ipc or an fd of one).
func nsAt(path string) (nsID, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nsID{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nsID{}, false
	}
	id := nsID{ino: st.Ino}
	var v uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), nsGetID, uintptr(unsafe.Pointer(&v))); e == 0 {
		id.id = v
	}
	return id, true
}

func nsOf(t *testing.T, path string) nsID {
	t.Helper()
	id, ok := nsAt(path)
	require.True(t, ok, path)
	return id
}

// runView is what a look at the processes below the host finds.
type runView struct {
	procs  map[int]string
	forked []int
	// spaces are the IPC namespaces of every thread of those processes
	// but the host's own.
	spaces map[nsID]bool
	// attachedOutside: a task in a namespace no plugin thread is in has a
	// SysV segment mapped; asleepOutside: one sleeps in semop, semtimedop,
	// msgsnd or msgrcv.
	attachedOutside, asleepOutside bool
}

// viewRun looks at the processes below host; self is the host's IPC
// namespace.
func viewRun(host int, self nsID) runView {
	v := runView{procs: descendants(host, map[int]string{}), spaces: map[nsID]bool{}}
	v.forked = forkedOf(v.procs)
	plugin := map[nsID]bool{}
	taskNS := map[int]nsID{}
	for pid := range v.procs {
		isTask := v.procs[pid] == "ipcfuzz-task" // forked ones too: the comm differs
		tids, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		for _, tid := range tids {
			id, ok := nsAt(filepath.Join("/proc", strconv.Itoa(pid), "task", tid.Name(), "ns/ipc"))
			if !ok || id == self {
				continue
			}
			v.spaces[id] = true
			if isTask {
				taskNS[pid] = id
			} else {
				plugin[id] = true
			}
		}
	}
	for pid, id := range taskNS {
		if plugin[id] {
			continue
		}
		if maps, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "maps")); err == nil && bytes.Contains(maps, []byte("/SYSV")) {
			v.attachedOutside = true
		}
		stat, err1 := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		sc, err2 := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "syscall"))
		if err1 == nil && err2 == nil && bytes.Contains(stat, []byte(") S")) {
			switch strings.Fields(string(sc) + " x")[0] {
			case strconv.Itoa(unix.SYS_SEMOP), strconv.Itoa(unix.SYS_SEMTIMEDOP), strconv.Itoa(unix.SYS_MSGSND), strconv.Itoa(unix.SYS_MSGRCV):
				v.asleepOutside = true
			}
		}
	}
	return v
}

// heldNamespaces lists the namespaces of made that a live thread is in or
// an open file names.
func heldNamespaces(made map[nsID]bool) []string {
	inos := map[uint64]bool{}
	for id := range made {
		inos[id.ino] = true
	}
	var held []string
	check := func(path string) {
		link, err := os.Readlink(path)
		if err != nil || !strings.HasPrefix(link, "ipc:[") {
			return
		}
		ino, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "ipc:["), "]"), 10, 64)
		if !inos[ino] {
			return
		}
		if id, ok := nsAt(path); ok && made[id] {
			held = append(held, fmt.Sprintf("%s (%s, %s)", path, link, commOf(pidOfPath(path))))
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		tids, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "task"))
		for _, tid := range tids {
			check(filepath.Join("/proc", p.Name(), "task", tid.Name(), "ns/ipc"))
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			check(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
		}
	}
	return held
}

// pidOfPath is the pid of a /proc/PID/... path.
func pidOfPath(path string) int {
	pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(path, "/proc/"), "/")[0])
	return pid
}

func commOf(pid int) string {
	comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(comm))
}

// forkedOf lists the forked task processes (named ipcfuzz-forked) among
// procs.
func forkedOf(procs map[int]string) []int {
	var out []int
	for pid := range procs {
		if commOf(pid) == "ipcfuzz-forked" {
			out = append(out, pid)
		}
	}
	return out
}
