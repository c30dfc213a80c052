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
	ops.ShmInvalid: -1,
}

// detachWorker detaches every segment the worker (t0) attached.
func (n *ns) detachWorker() error {
	var err error
	for _, a := range n.shm.attached {
		if a.task == 0 && !a.win {
			if _, _, e := unix.Syscall(unix.SYS_SHMDT, a.addr, 0, 0); e != 0 && err == nil {
				err = fmt.Errorf("kernel: detaching %#x: %w", a.addr, e)
			}
		}
	}
	if n.win != 0 && n.shm.attachedBy[0] {
		// Every piece in the window goes, whatever attached it.
		if _, _, e := unix.Syscall(unix.SYS_MUNMAP, n.win, windowBytes, 0); e != 0 && err == nil {
			err = fmt.Errorf("kernel: clearing the shm window: %w", e)
		}
	}
	n.shm.attached = slices.DeleteFunc(n.shm.attached, func(a *kattach) bool { return a.task == 0 })
	return err
}

// addrsOf lists the addresses task t attached.
func (n *ns) addrsOf(t int) []uintptr {
	var out []uintptr
	for _, a := range n.shm.attached {
		if a.task == t && !a.win {
			out = append(out, a.addr)
		}
	}
	return out
}

func init() {
	calls.Add((*ns).shmat, ops.KindShmat)
	calls.Add((*ns).shmdt, ops.KindShmdt)
	calls.Add((*ns).shmctl, ops.KindShmctl)
	calls.Add((*ns).touch, ops.KindShmRead, ops.KindShmWrite)
	calls.Add(errnoCall(func(n *ns, op ops.Op) (unix.Errno, error) {
		n.shm.forcedWritten = true
		return n.proc.write("/proc/sys/kernel/shm_rmid_forced", strconv.FormatInt(op.Value, 10)+"\n")
	}), ops.KindRmidForced)
}

func (n *ns) shmat(op ops.Op) (ops.Result, unix.Errno, error) {
	var flags uintptr
	if op.Flags&ops.ShmatRdonly != 0 {
		flags |= unix.SHM_RDONLY
	}
	if op.Flags&ops.ShmatExec != 0 {
		flags |= shmExec
	}
	if op.Flags&ops.ShmatRnd != 0 {
		flags |= shmRnd
	}
	if op.Flags&ops.ShmatRemap != 0 {
		flags |= shmRemap
	}
	addr, base, err := n.shmatAt(op)
	if err != nil {
		return ops.Result{}, 0, err
	}
	if err := n.remapFits(op); err != nil {
		return ops.Result{}, 0, err
	}
	r, e, err := n.tasks.sys(callerOf(op), unix.SYS_SHMAT, [6]uintptr{uintptr(op.Obj.ID), addr, flags}, nil, 0)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	page, win := inWindow(r, base)
	seq, err := n.taskSeq(int(op.Task))
	if err != nil {
		return ops.Result{}, 0, err
	}
	if remap := op.Flags&ops.ShmatRemap != 0; win && (remap || n.spaces.used) {
		size, ok, err := n.shmSize(op.Task, op.Obj.ID)
		if err != nil {
			return ops.Result{}, 0, err
		}
		if ok && remap {
			n.forgetAt(int(op.Task), r, r+uintptr(ops.Pages(size))*ops.PageSize)
		}
		if ok && n.spaces.used {
			n.recordWinNS(op.Task, page, size, seq)
		}
	}
	a := &kattach{att: op.Bind, task: int(op.Task), pid: ops.TaskPID(int(op.Task), n.tasks.gen[op.Task]), addr: r, id: int64(int32(op.Obj.ID)), win: win, ns: seq}
	a.origin = a
	n.shm.attached = append(n.shm.attached, a)
	n.shm.attachedBy[op.Task] = true
	if op.Bind > 0 {
		n.shm.atts[op.Bind] = a
		delete(n.shm.winPage, op.Bind)
		if win {
			n.shm.winPage[op.Bind] = page
		}
	}
	if win {
		return ops.Result{Shm: ops.ShmResult{At: page + 1}}, 0, nil
	}
	return ops.Result{}, 0, nil
}

func (n *ns) shmdt(op ops.Op) (ops.Result, unix.Errno, error) {
	addr, k, err := n.resolveAddr(op)
	if err != nil {
		return ops.Result{}, 0, err
	}
	_, e, err := n.tasks.sys(callerOf(op), unix.SYS_SHMDT, [6]uintptr{addr}, nil, 0)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	switch {
	case k != nil:
		n.forget(k)
	case op.Att > 0 || op.Addr.Win:
		n.forgetAt(int(op.Task), addr, addr+1)
	default:
		return ops.Result{}, 0, fmt.Errorf("shmdt(%#x) succeeded where nothing of ours is attached", addr)
	}
	return ops.Result{}, 0, nil
}

// forget drops an attachment that is gone.
func (n *ns) forget(a *kattach) {
	n.shm.attached = slices.DeleteFunc(n.shm.attached, func(x *kattach) bool { return x == a })
	if n.shm.atts[a.att] == a.origin && !slices.ContainsFunc(n.shm.attached, func(x *kattach) bool { return x.origin == a.origin }) {
		delete(n.shm.atts, a.att)
	}
}

// forgetTask drops the attachments of task t, whose process exited.
func (n *ns) forgetTask(t int) {
	n.shm.winNS[t] = nil
	for _, a := range slices.Clone(n.shm.attached) {
		if a.task == t {
			n.forget(a)
		}
	}
}

func (n *ns) shmctl(op ops.Op) (ops.Result, unix.Errno, error) {
	cmd, ok := shmCmds[op.Cmd]
	if !ok {
		return ops.Result{}, 0, fmt.Errorf("unknown shmctl command %d", op.Cmd)
	}
	var buf statBuf
	ds := (*unix.SysvShmDesc)(unsafe.Pointer(&buf.ds))
	if op.Cmd == ops.ShmIPCSet {
		ds.Perm.Uid, ds.Perm.Gid, ds.Perm.Mode = uint32(op.Value), op.GroupOr(uint32(op.Value)), uint32(op.Mode&0o777)
	}
	bb, args := withBadBuf(op, buf.bytes(), [6]uintptr{uintptr(op.Obj.ID), uintptr(cmd)}, 2)
	r, e, err := n.tasks.sys(callerOf(op), unix.SYS_SHMCTL, args, bb, 2)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	res := ops.Result{}
	b := unsafe.Pointer(&buf.ds)
	switch op.Cmd {
	case ops.ShmIPCStat, ops.ShmStat, ops.ShmStatAny:
		res.Row = ops.Row{
			Key: ds.Perm.Key, Mode: uint16(ds.Perm.Mode), Size: int64(ds.Segsz),
			Cpid: n.tasks.pid(int64(ds.Cpid)), Lpid: n.tasks.pid(int64(ds.Lpid)), Nattch: int64(ds.Nattch),
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
func (n *ns) shmAttachments() ([]ops.Attachment, error) {
	var out []ops.Attachment
	for t := range ops.NumTasks {
		if !n.shm.attachedBy[t] {
			continue
		}
		pid := os.Getpid()
		if t > 0 {
			p := n.tasks.pool.Current(t)
			if p == nil {
				continue // a task not in this namespace holds no attachment
			}
			pid = p.Pid()
		}
		b, e, err := n.proc.read("/proc/" + strconv.Itoa(pid) + "/maps")
		if err == nil && e != 0 {
			err = e
		}
		if err != nil {
			return nil, fmt.Errorf("reading the maps of task t%d: %w", t, err)
		}
		if out, err = n.appendMapped(out, t, b); err != nil {
			return nil, err
		}
	}
	ops.SortAttachments(out)
	return out, nil
}

// appendMapped appends the shm mappings of task t that maps lists.
func (n *ns) appendMapped(out []ops.Attachment, t int, maps []byte) ([]ops.Attachment, error) {
	me := ops.TaskPID(t, n.tasks.gen[t])
	base := uintptr(taskWindowBase)
	if t == 0 {
		base = n.win
	}
	for len(maps) > 0 {
		var line []byte
		line, maps, _ = bytes.Cut(maps, []byte("\n"))
		f := bytes.Fields(line)
		if len(f) < 6 || !bytes.HasPrefix(f[5], []byte("/SYSV")) {
			continue
		}
		start, end, _ := bytes.Cut(f[0], []byte("-"))
		addr, err1 := strconv.ParseUint(string(start), 16, 64)
		to, err3 := strconv.ParseUint(string(end), 16, 64)
		id, err2 := strconv.ParseInt(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("task t%d maps line %q: bad address or inode", t, line)
		}
		a := ops.Attachment{Task: me, ID: id}
		page, win := inWindow(uintptr(addr), base)
		mine := t > 0 || win // a task's maps are its own, and so is a window
		if win {
			a.At, a.Pages = page+1, int64(to-addr)/ops.PageSize
			a.NS = n.shm.winNS[t][page]
		}
		for _, k := range n.shm.attached {
			if k.task == t && k.addr == uintptr(addr) {
				mine = true
				a.NS = k.ns
				if n.shm.atts[k.att] == k.origin {
					a.Att = k.att
				}
			}
		}
		if mine {
			out = append(out, a)
		}
	}
	return out, nil
}

// shmSnapshot reads shm_tot (SHM_INFO), the live attachments (the tasks'
// maps) and, if it was written since the last Reset, shm_rmid_forced (0 in
// a new namespace). The sysctl is read last: a read of 1 destroys orphaned
// segments nobody has attached, which the listing must not have hidden.
func (n *ns) shmSnapshot() (ops.ShmState, error) {
	var st ops.ShmState
	var err error
	if st.Tot, err = shmTot(); err != nil {
		return st, err
	}
	if st.Attachments, err = n.shmAttachments(); err != nil {
		return st, err
	}
	if n.shm.forcedWritten {
		if st.RmidForced, err = n.proc.readInt("/proc/sys/kernel/shm_rmid_forced"); err != nil {
			return st, err
		}
	}
	return st, nil
}

// shmTot reads shm_tot (SHM_INFO) of the calling thread's namespace.
func shmTot() (int64, error) {
	var buf statBuf
	if e := ipcCtl(ops.Shm, 0, shmInfoCmd, &buf); e != 0 {
		return 0, fmt.Errorf("SHM_INFO: %w", e)
	}
	return (*[2]int64)(unsafe.Pointer(&buf.ds))[1], nil
}
