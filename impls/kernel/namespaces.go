//go:build linux && amd64

package kernel

import (
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// A task t1..t15 may leave the script's namespace (the worker's): unshare
// gives it a new one, setns takes it into another task's (or back into the
// script's). Which namespace a task is in is observed, never assumed: the
// inode of /proc/PID/ns/ipc of its process, grouped at the snapshot. A
// task that has not run since the script's start or its last exit is in
// the script's namespace, wherever its process is (its next call joins the
// worker's, package task). The namespaces are ordered by the unshare that
// made each, whose inode the adapter records right after it.
//
// Another namespace is read on a thread of its own (readNamespace), never
// on the worker: setns runs exit_sem, which would apply the worker's own
// semaphore adjustments (t0's SEM_UNDO) where it holds the only reference
// to its undo list.

// spaces is what the adapter knows of the namespaces a script made.
type spaces struct {
	// used says an unshare or a setns ran in the script: until then every
	// task is in the worker's namespace, and nothing is looked up.
	used bool
	// made holds the inode of the namespace each unshare made, in the
	// order they ran: the k-th unshare's is made[k-1], the namespace's
	// Seq. An inode is unique among live namespaces only: one made again
	// with the number of a dead one is the last with that number.
	made []uint64
}

// unshare moves task op.Task into a new IPC namespace and records it.
func (n *ns) unshare(op ops.Op) error {
	t := int(op.Task)
	n.spaces.used = true
	if _, err := n.tasks.get(t); err != nil {
		return err
	}
	p, err := n.tasks.pool.Unshare(t)
	if err != nil {
		return err
	}
	ino, err := nsInode("/proc/" + strconv.Itoa(p.Pid()) + "/ns/ipc")
	if err != nil {
		return fmt.Errorf("task t%d: %w", t, err)
	}
	n.spaces.made = append(n.spaces.made, ino)
	return nil
}

// setns moves task op.Task into the namespace of task op.NamespaceOf():
// that task's process's, or the worker's for t0 and for a task that has
// not run since the script's start or its last exit (which is not
// started for it: its slot stays free).
func (n *ns) setns(op ops.Op) error {
	t, m := int(op.Task), int(op.NamespaceOf())
	n.spaces.used = true
	path := n.tasks.pool.Path()
	if p := n.tasks.pool.Current(m); m > 0 && p != nil && !p.OwesJoin() {
		path = "/proc/" + strconv.Itoa(p.Pid()) + "/ns/ipc"
	}
	if _, err := n.tasks.get(t); err != nil {
		return err
	}
	_, err := n.tasks.pool.Join(t, path)
	return err
}

// nsGroup is a namespace other than the worker's with the tasks in it.
type nsGroup struct {
	ino   uint64
	seq   int    // the unshare that made it: the seq-th of the script
	tasks uint16 // bit N for tN
	pid   int    // a task process in it
}

// seqOf is the Seq of the namespace of inode ino: that of the last
// unshare that made a namespace with that inode.
func (n *ns) seqOf(ino uint64) (int, bool) {
	for k := len(n.spaces.made) - 1; k >= 0; k-- {
		if n.spaces.made[k] == ino {
			return k + 1, true
		}
	}
	return 0, false
}

// taskSeq is the Seq of the namespace task t is in: 0 for the script's.
func (n *ns) taskSeq(t int) (int, error) {
	if !n.spaces.used || t == 0 {
		return 0, nil
	}
	self, err := nsInode("/proc/thread-self/ns/ipc")
	if err != nil {
		return 0, err
	}
	_, seq, err := n.whereIs(t, self)
	return seq, err
}

// whereIs is the namespace task t (t1..t15) is in: the inode of its
// process's and its Seq, or seq 0 where it is in the worker's (of inode
// self), as a task counts that has not run since the script's start or its
// last exit.
func (n *ns) whereIs(t int, self uint64) (ino uint64, seq int, err error) {
	p := n.tasks.pool.Current(t)
	if p == nil || p.OwesJoin() {
		return self, 0, nil
	}
	if ino, err = nsInode("/proc/" + strconv.Itoa(p.Pid()) + "/ns/ipc"); err != nil {
		return 0, 0, fmt.Errorf("task t%d: %w", t, err)
	}
	if ino == self {
		return ino, 0, nil
	}
	seq, ok := n.seqOf(ino)
	if !ok {
		return 0, 0, fmt.Errorf("task t%d (pid %d) is in IPC namespace %d, which no unshare of this script made", t, p.Pid(), ino)
	}
	return ino, seq, nil
}

// taskNamespaces groups the tasks that are not in the worker's namespace
// by namespace, in the order the namespaces were made, and returns the
// tasks (t0 too) that are in the worker's.
func (n *ns) taskNamespaces() ([]nsGroup, uint16, error) {
	if !n.spaces.used {
		return nil, allTasks, nil
	}
	mine := uint16(1)
	self, err := nsInode("/proc/thread-self/ns/ipc")
	if err != nil {
		return nil, 0, err
	}
	groups := make([]nsGroup, len(n.spaces.made))
	for t := 1; t < ops.NumTasks; t++ {
		ino, seq, err := n.whereIs(t, self)
		if err != nil {
			return nil, 0, err
		}
		if seq == 0 {
			mine |= 1 << t
			continue
		}
		g := &groups[seq-1]
		g.ino, g.seq, g.pid = ino, seq, n.tasks.pool.Current(t).Pid()
		g.tasks |= 1 << t
	}
	return slices.DeleteFunc(groups, func(g nsGroup) bool { return g.tasks == 0 }), mine, nil
}

// readNamespaces reads each namespace of groups, its sysctls from their
// files if files is set.
func (n *ns) readNamespaces(groups []nsGroup, files bool) ([]ops.NamespaceState, error) {
	var out []ops.NamespaceState
	for i, g := range groups {
		st, err := n.readNamespace(g, files)
		if err != nil {
			return nil, fmt.Errorf("namespace %d (of task process %d): %w", i+1, g.pid, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// readNamespace reads namespace g as the worker's is read, on a new locked
// thread that enters it and is then thrown away. Its <type>_next_id and
// shm_rmid_forced are read from their files only if files is set: only t0
// may write a sysctl (ops.Spec: no task= for next_id, limit, rmid_forced,
// sem_limits), and t0 is always in the script's namespace, so another
// namespace keeps a new one's -1 and 0 (the first open of a sysctl file in
// a namespace costs about 100 µs; the tests read the files and compare).
func (n *ns) readNamespace(g nsGroup, files bool) (ops.NamespaceState, error) {
	type answer struct {
		st  ops.NamespaceState
		err error
	}
	done := make(chan answer, 1)
	worker.GoLocked(func() {
		// Returning while locked ends the thread, namespace and all.
		st, err := n.readIn(g, files)
		done <- answer{st, err}
	})
	a := <-done
	return a.st, a.err
}

// readIn enters namespace g from the calling thread, which must be locked
// and thrown away afterwards, and reads it.
func (n *ns) readIn(g nsGroup, files bool) (ops.NamespaceState, error) {
	st := ops.NamespaceState{Seq: g.seq, Tasks: g.tasks}
	path := "/proc/" + strconv.Itoa(g.pid) + "/ns/ipc"
	if err := enter(path, g.ino); err != nil {
		return st, err
	}
	r := reader{proc: &procfs{}, tasks: n.tasks, in: g.tasks}
	s, err := r.ipcState([len(ops.IPCTypes)]bool{files, files, files})
	if err != nil {
		return st, err
	}
	st.IDs, st.Rows, st.Queues, st.Sems, st.SemLimits = s.IDs, s.Rows, s.Queues, s.Sems, s.SemLimits
	if st.ShmTot, err = shmTot(); err != nil {
		return st, err
	}
	if !files {
		return st, nil
	}
	// Read last, as in the worker's snapshot: a 1 read destroys the
	// orphaned segments nothing attaches.
	if st.RmidForced, err = r.proc.readInt("/proc/sys/kernel/shm_rmid_forced"); err != nil {
		return st, err
	}
	return st, nil
}

// enter moves the calling thread into the IPC namespace at path and checks
// that it is the one of inode ino.
func enter(path string, ino uint64) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWIPC); err != nil {
		return fmt.Errorf("setns %s: %w", path, err)
	}
	got, err := nsInode("/proc/thread-self/ns/ipc")
	if err != nil {
		return err
	}
	if got != ino {
		return fmt.Errorf("setns %s: in IPC namespace %d, not %d", path, got, ino)
	}
	return nil
}

// nsInode is the inode of the IPC namespace at path (/proc/.../ns/ipc).
func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Ino, nil
}

// peek runs a syscall that only reads (nr, args; buf as argument bufArg)
// in the namespace of task t, with the issuer's own credentials: on the
// worker while no task has left its namespace, else by task t itself.
func (n *ns) peek(t uint8, nr uintptr, args [6]uintptr, buf []byte, bufArg int) (uintptr, unix.Errno, error) {
	if !n.spaces.used {
		t = 0
	}
	return n.tasks.sys(caller{task: t}, nr, args, buf, bufArg)
}

// shmSize is the size of segment id as task t sees it (IPC_STAT), or
// false if it cannot be read.
func (n *ns) shmSize(t uint8, id int64) (int64, bool, error) {
	var buf statBuf
	_, e, err := n.peek(t, unix.SYS_SHMCTL, [6]uintptr{uintptr(id), unix.IPC_STAT}, buf.bytes(), 2)
	if err != nil || e != 0 {
		return 0, false, err
	}
	return int64((*unix.SysvShmDesc)(unsafe.Pointer(&buf.ds)).Segsz), true, nil
}

// recordWinNS records that the pages a shmat by task t mapped at window
// page page, of a segment of size bytes, hold a segment of namespace seq.
func (n *ns) recordWinNS(t uint8, page, size int64, seq int) {
	if n.shm.winNS[t] == nil {
		n.shm.winNS[t] = map[int64]int{}
	}
	for p := page; p < page+ops.Pages(size) && p < ops.ShmWindowPages; p++ {
		n.shm.winNS[t][p] = seq
	}
}
