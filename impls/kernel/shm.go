//go:build linux && amd64

package kernel

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// shmctl commands and shmat flags of <linux/shm.h> that x/sys/unix lacks.
const (
	shmLock     = 11
	shmUnlock   = 12
	shmStatCmd  = 13
	shmInfoCmd  = 14
	shmStatAny  = 15
	shmExec     = 0o100000
	unalignedAt = 0x1001 // not page-aligned and no SHM_RND: EINVAL
	// notAttached is where no task ever has anything mapped (below
	// vm.mmap_min_addr): shmdt there is EINVAL.
	notAttached = 0x1000
)

var shmCmds = map[ops.ShmCmd]int{
	ops.ShmIPCStat: unix.IPC_STAT, ops.ShmIPCSet: unix.IPC_SET, ops.ShmLock: shmLock, ops.ShmUnlock: shmUnlock,
	ops.ShmIPCInfo: ipcInfo, ops.ShmInfoCmd: shmInfoCmd, ops.ShmStat: shmStatCmd, ops.ShmStatAny: shmStatAny,
}

// kattach is one attachment the adapter made: which task holds it, at
// which address.
type kattach struct {
	att  int
	task int
	pid  ops.PID
	addr uintptr
	id   int64
}

// shmState is what the adapter remembers of the tasks and the shm subsystem
// between two Resets: the task processes (which outlive a Reset, pool.go),
// the pid of every task incarnation of the script, the attachments it
// made, and whether shm_rmid_forced was written.
type shmState struct {
	tasks    [ops.NumTasks]*taskProc
	gen      [ops.NumTasks]int
	pids     map[int]ops.PID
	attached []*kattach
	atts     map[int]*kattach
	// attachedBy records, per task, a shmat by that task in this script
	// (by this incarnation or an earlier one): only those tasks can hold
	// an attachment, so only their maps are read.
	attachedBy    [ops.NumTasks]bool
	forcedWritten bool
}

// init starts the state of a script; the task processes stay.
func (s *shmState) init() {
	s.gen = [ops.NumTasks]int{}
	s.pids = map[int]ops.PID{os.Getpid(): ops.TaskPID(0, 0)}
	s.attached, s.atts = nil, map[int]*kattach{}
	s.attachedBy, s.forcedWritten = [ops.NumTasks]bool{}, false
}

// pid translates a pid the kernel reports into a task identity.
func (s *shmState) pid(p int64) ops.PID {
	if p == 0 {
		return 0
	}
	if id, ok := s.pids[int(p)]; ok {
		return id
	}
	return ops.PIDUnknown
}

// endScript releases the tasks and detaches the worker's own attachments,
// so that nothing is left of the namespace about to be dropped, and starts
// the state of the next script.
func (t *thread) endScript() error {
	t.releaseTasks()
	err := t.detachWorker()
	t.shmState.init()
	return err
}

// detachWorker detaches every segment the worker (t0) attached.
func (t *thread) detachWorker() error {
	var err error
	for _, a := range t.attached {
		if a.task == 0 {
			if _, _, e := unix.Syscall(unix.SYS_SHMDT, a.addr, 0, 0); e != 0 && err == nil {
				err = fmt.Errorf("kernel: detaching %#x: %w", a.addr, e)
			}
		}
	}
	t.attached = slices.DeleteFunc(t.attached, func(a *kattach) bool { return a.task == 0 })
	return err
}

// doShm runs a shm operation; ok is false for kinds it does not handle.
func (t *thread) doShm(op ops.Op) (r ops.Result, e unix.Errno, err error) {
	switch op.Kind {
	case ops.KindShmat:
		return t.shmat(op)
	case ops.KindShmdt:
		return t.shmdt(op)
	case ops.KindShmctl:
		return t.shmctl(op)
	case ops.KindRmidForced:
		t.forcedWritten = true
		e, err = writeProc("/proc/sys/kernel/shm_rmid_forced", strconv.FormatInt(op.Value, 10)+"\n")
		return ops.Result{}, e, err
	}
	return ops.Result{}, 0, fmt.Errorf("not a shm operation")
}

func (t *thread) shmat(op ops.Op) (ops.Result, unix.Errno, error) {
	var flags uintptr
	if op.Flags&ops.ShmatRdonly != 0 {
		flags |= unix.SHM_RDONLY
	}
	if op.Flags&ops.ShmatExec != 0 {
		flags |= shmExec
	}
	var addr uintptr
	if op.Flags&ops.ShmatBadAddr != 0 {
		addr = unalignedAt
	}
	r, e, err := t.sys(op, unix.SYS_SHMAT, [6]uintptr{uintptr(op.Obj.ID), addr, flags}, nil, 0)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	a := &kattach{att: op.Bind, task: int(op.Task), pid: ops.TaskPID(int(op.Task), t.gen[op.Task]), addr: r, id: int64(int32(op.Obj.ID))}
	t.attached = append(t.attached, a)
	t.attachedBy[op.Task] = true
	if op.Bind > 0 {
		t.atts[op.Bind] = a
	}
	return ops.Result{}, 0, nil
}

func (t *thread) shmdt(op ops.Op) (ops.Result, unix.Errno, error) {
	a := t.atts[op.Att]
	addr := uintptr(notAttached)
	if a != nil && a.task == int(op.Task) {
		addr = a.addr
	}
	_, e, err := t.sys(op, unix.SYS_SHMDT, [6]uintptr{addr}, nil, 0)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	if a == nil || addr != a.addr {
		return ops.Result{}, 0, fmt.Errorf("shmdt(%#x) succeeded where nothing of ours is attached", addr)
	}
	t.forget(a)
	return ops.Result{}, 0, nil
}

func (t *thread) forget(a *kattach) {
	t.attached = slices.DeleteFunc(t.attached, func(x *kattach) bool { return x == a })
	if t.atts[a.att] == a {
		delete(t.atts, a.att)
	}
}

func (t *thread) shmctl(op ops.Op) (ops.Result, unix.Errno, error) {
	cmd, ok := shmCmds[op.Cmd]
	if !ok {
		return ops.Result{}, 0, fmt.Errorf("unknown shmctl command %d", op.Cmd)
	}
	var buf statBuf
	ds := (*unix.SysvShmDesc)(unsafe.Pointer(&buf.ds))
	if op.Cmd == ops.ShmIPCSet {
		ds.Perm.Uid, ds.Perm.Gid, ds.Perm.Mode = uint32(op.Value), op.GroupOr(uint32(op.Value)), uint32(op.Mode&0o777)
	}
	r, e, err := t.sys(op, unix.SYS_SHMCTL, [6]uintptr{uintptr(op.Obj.ID), uintptr(cmd)}, buf.bytes(), 2)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	res := ops.Result{}
	b := unsafe.Pointer(&buf.ds)
	switch op.Cmd {
	case ops.ShmIPCStat, ops.ShmStat, ops.ShmStatAny:
		res.Row = ops.Row{
			Key: ds.Perm.Key, Mode: uint16(ds.Perm.Mode), Size: int64(ds.Segsz),
			Cpid: t.pid(int64(ds.Cpid)), Lpid: t.pid(int64(ds.Lpid)), Nattch: int64(ds.Nattch),
			UID: ds.Perm.Uid, GID: ds.Perm.Gid, CUID: ds.Perm.Cuid, CGID: ds.Perm.Cgid,
			Atime: ds.Atime != 0, Dtime: ds.Dtime != 0, Ctime: ds.Ctime != 0,
		}
		if op.Cmd != ops.ShmIPCStat {
			res.ID, res.Row.ID = int64(r), int64(r)
		}
	case ops.ShmIPCInfo: // struct shminfo64
		u := (*[5]uint64)(b)
		res.ID = int64(r)
		res.Info = ops.ShmInfo{Shmmax: u[0], Shmmin: u[1], Shmmni: u[2], Shmseg: u[3], Shmall: u[4]}
	case ops.ShmInfoCmd: // struct shm_info: int used_ids, then 5 unsigned longs
		u := (*[6]int64)(b)
		res.ID = int64(r)
		res.Info = ops.ShmInfo{UsedIDs: int64(*(*int32)(b)), ShmTot: u[1], ShmRss: u[2], ShmSwp: u[3], SwapAttempts: u[4], SwapSuccesses: u[5]}
	}
	return res, 0, nil
}

// shmAttachments lists the shm mappings every live task has, from
// /proc/<pid>/maps: the segment is the mapping's inode number (the shmid),
// the handle the one whose shmat got that address in that task (0 if none
// did). The worker's (t0) are the mappings of this process that it made:
// another Model in the same process maps its own segments here too.
func (t *thread) shmAttachments() ([]ops.Attachment, error) {
	var out []ops.Attachment
	for n := range ops.NumTasks {
		if !t.attachedBy[n] {
			continue
		}
		pid := os.Getpid()
		if n > 0 {
			if t.tasks[n] == nil || t.tasks[n].ns != t.nsGen {
				continue // a task not in this namespace holds no attachment
			}
			pid = t.tasks[n].pid
		}
		b, e, err := t.readProc("/proc/" + strconv.Itoa(pid) + "/maps")
		if err == nil && e != 0 {
			err = e
		}
		if err != nil {
			return nil, fmt.Errorf("reading the maps of task t%d: %w", n, err)
		}
		me := ops.TaskPID(n, t.gen[n])
		for len(b) > 0 {
			var line []byte
			line, b, _ = bytes.Cut(b, []byte("\n"))
			f := bytes.Fields(line)
			if len(f) < 6 || !bytes.HasPrefix(f[5], []byte("/SYSV")) {
				continue
			}
			start, _, _ := bytes.Cut(f[0], []byte("-"))
			addr, err1 := strconv.ParseUint(string(start), 16, 64)
			id, err2 := strconv.ParseInt(string(f[4]), 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("task t%d maps line %q: bad address or inode", n, line)
			}
			a := ops.Attachment{Task: me, ID: id}
			mine := n > 0 // a task's maps are its own
			for _, k := range t.attached {
				if k.task == n && k.addr == uintptr(addr) {
					mine = true
					if t.atts[k.att] == k {
						a.Att = k.att
					}
				}
			}
			if mine {
				out = append(out, a)
			}
		}
	}
	ops.SortAttachments(out)
	return out, nil
}
