package ipcns

import (
	"math"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The shm subsystem of ipc/shm.c over the shared tables: attachments per
// task, IPC_RMID while attached (SHM_DEST), destruction at the last detach,
// shm_rmid_forced, exit_shm and the shmctl commands.
//
// A task is a process: task 0 is the script's main task, tasks 1..MaxTask
// come into existence at their first operation and end with KindExit, after
// which the next operation starts a new incarnation (a new identity). The
// model assumes every task has a non-zero RLIMIT_MEMLOCK and that SHM_LOCK by
// an unprivileged owner stays within it (its ENOMEM is not modelled: the
// kernel counts locked pages per uid across the whole machine). The kernel
// adapter's tasks inherit the plugin's limit, 8 MiB on the test machine.

// attachment is one shmat: at an address the kernel chose (one VMA, in
// shmState.attached), or at a window page (its VMAs are in shmState.win of
// its task).
type attachment struct {
	att   int
	task  ops.PID
	obj   *Obj
	write bool // mapped PROT_WRITE (not SHM_RDONLY)
	win   bool
	page  int64 // the window page it was attached at
	// origin is the shmat this mapping comes from: itself, or for a
	// fork's copy the parent's origin (the same address in the child).
	origin *attachment
}

// shmState is the shm state beyond the tables. It is the tasks' (their
// address spaces and identities) and the machine's (huge pages); what is a
// namespace's is in space.
type shmState struct {
	gen      [ops.NumTasks]int
	attached []*attachment       // live attachments where the kernel chose, in attach order
	atts     map[int]*attachment // by handle: the last shmat that bound it (an origin)
	// win holds each task's VMAs in its window, by start page.
	win [ops.NumTasks][]*shmVMA
	// winPage is the window page of each handle whose attachment was at a
	// window address: the handle names it even once detached.
	winPage map[int]int64
	// hugeFree is how many huge pages SHM_HUGETLB segments may still
	// reserve (-1: no hugetlbfs), hugePages the size of one in small pages.
	hugeFree, hugePages int64
}

// taskPID is the identity of the current incarnation of a task.
func (ns *Namespace) taskPID(task uint8) ops.PID {
	return ops.TaskPID(int(task), ns.shm.gen[task])
}

func init() {
	handlers.Add(result((*Namespace).shmat), ops.KindShmat)
	handlers.Add(errno((*Namespace).shmdt), ops.KindShmdt)
	handlers.Add(result((*Namespace).shmctl), ops.KindShmctl)
	handlers.Add(result((*Namespace).shmAccess), ops.KindShmRead, ops.KindShmWrite)
	handlers.Add(errno(func(ns *Namespace, op ops.Op) ops.Errno {
		if op.As != 0 {
			return ops.EACCES // the sysctl file is root's
		}
		return ns.setRmidForced(op.Value)
	}), ops.KindRmidForced)
}

// shmat is do_shmat: the address checks, the lookup and permission, then
// the mapping (a window address without SHM_REMAP must overlap nothing).
func (ns *Namespace) shmat(op ops.Op) ops.Result {
	if int32(op.Obj.ID) < 0 {
		return ops.Result{Err: ops.EINVAL}
	}
	at, inWin, e := shmatAddr(op)
	if e != ops.OK {
		return ops.Result{Err: e}
	}
	o := ns.cur.types[ops.Shm].lookup(op.Obj.ID)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	acc := uint16(0o444)
	if op.Flags&ops.ShmatRdonly == 0 {
		acc |= 0o222
	}
	if op.Flags&ops.ShmatExec != 0 {
		acc |= 0o111
	}
	if !permitted(o, op.As, acc) {
		return ops.Result{Err: ops.EACCES}
	}
	task := ns.taskPID(op.Task)
	a := &attachment{att: op.Bind, task: task, obj: o, write: op.Flags&ops.ShmatRdonly == 0, win: inWin, page: at}
	a.origin = a
	// do_shmat holds a count of its own across the mapping, so that the
	// segment survives it; dropping it may destroy the segment.
	o.Nattch++
	res := ops.Result{}
	if inWin {
		if e := ns.mapWindow(op, a); e != ops.OK {
			o.Nattch--
			if ns.shmMayDestroy(o) {
				ns.shmDestroy(o)
			}
			return ops.Result{Err: e}
		}
		res.Shm = ops.ShmResult{At: at + 1}
	} else {
		ns.shmOpen(o, task)
		ns.shm.attached = append(ns.shm.attached, a)
	}
	o.Nattch--
	if op.Bind > 0 {
		ns.shm.atts[op.Bind] = a
		delete(ns.shm.winPage, op.Bind)
		if inWin {
			ns.shm.winPage[op.Bind] = at
		}
	}
	return res
}

// shmatAddr is do_shmat's address check: the window page to map at (inWin)
// or none (the kernel chooses).
func shmatAddr(op ops.Op) (page int64, inWin bool, e ops.Errno) {
	a := op.Addr
	switch {
	case op.Flags&ops.ShmatBadAddr != 0:
		return 0, false, ops.EINVAL // 0x1001 without SHM_RND
	case a.Win:
		if a.Off != 0 && op.Flags&ops.ShmatRnd == 0 {
			return 0, false, ops.EINVAL // not page-aligned (SHMLBA is the page)
		}
		return a.Page, true, ops.OK
	case a.Off != 0:
		// An absolute address below SHMLBA: without SHM_RND unaligned;
		// with it rounded down to NULL, which SHM_REMAP refuses (the
		// vocabulary allows no other case).
		return 0, false, ops.EINVAL
	case op.Flags&ops.ShmatRemap != 0:
		return 0, false, ops.EINVAL // SHM_REMAP at NULL
	}
	return 0, false, ops.OK
}

// shmOpen is shm_open: one VMA more.
func (ns *Namespace) shmOpen(o *Obj, task ops.PID) {
	o.Nattch++
	o.Atime = true
	o.Lpid = task
}

// mapWindow maps attachment a at its window page: without SHM_REMAP an
// overlap with any mapping (the task's VMAs, the guard page past the
// window) is EINVAL; with it, what was there is unmapped first.
func (ns *Namespace) mapWindow(op ops.Op, a *attachment) ops.Errno {
	pages := ops.Pages(a.obj.Size)
	end := a.page + pages
	if op.Flags&ops.ShmatRemap == 0 {
		if end > ops.ShmWindowPages || ns.overlaps(op.Task, a.page, end) {
			return ops.EINVAL
		}
	} else {
		ns.unmapWindow(op.Task, a.page, end)
	}
	ns.shmOpen(a.obj, a.task)
	v := &shmVMA{start: a.page, end: end, a: a}
	ns.insertVMA(op.Task, v)
	return ops.OK
}

// shmdt is ksys_shmdt at the address op names.
func (ns *Namespace) shmdt(op ops.Op) ops.Errno {
	addr := ns.resolveAddr(op)
	switch {
	case addr.off != 0:
		return ops.EINVAL // not page-aligned
	case addr.far != nil:
		ns.detach(addr.far)
		return ops.OK
	case !addr.win:
		return ops.EINVAL // nothing of a task is mapped at page 1 or NULL
	}
	return ns.shmdtWindow(op.Task, addr.page)
}

// named reports whether a's address is the one its handle names (the
// handle's last shmat, or a fork's copy of it).
func (ns *Namespace) named(a *attachment) bool { return ns.shm.atts[a.att] == a.origin }

// detach is shm_close of an attachment where the kernel chose.
func (ns *Namespace) detach(a *attachment) {
	ns.shm.attached = slices.DeleteFunc(ns.shm.attached, func(x *attachment) bool { return x == a })
	ns.shmClose(a.obj, a.task)
}

// shmClose is shm_close: one VMA fewer, lpid and dtime of the closer, and
// the segment destroyed if nothing keeps it.
func (ns *Namespace) shmClose(o *Obj, task ops.PID) {
	o.Lpid = task
	o.Dtime = true
	o.Nattch--
	if ns.shmMayDestroy(o) {
		ns.shmDestroy(o)
	}
}

// shmMayDestroy is shm_may_destroy: shm_rmid_forced of the segment's
// namespace, which may not be the caller's.
func (ns *Namespace) shmMayDestroy(o *Obj) bool {
	return o.Nattch == 0 && (o.space.rmidForced != 0 || o.Dest)
}

// shmDestroy is shm_destroy: the id and the pages go, in the segment's
// namespace.
func (ns *Namespace) shmDestroy(o *Obj) {
	o.space.types[ops.Shm].table.Remove(o.Idx)
	o.space.shmTot -= ops.Pages(o.Size)
	if o.Huge > 0 {
		ns.shm.hugeFree += o.Huge
	}
}

// shmRmid is do_shm_rmid: destroy now, or mark SHM_DEST and make the key
// private so that shmget no longer finds it.
func (ns *Namespace) shmRmid(o *Obj) {
	if o.Nattch == 0 {
		ns.shmDestroy(o)
		return
	}
	o.Dest = true
	if o.Key != ops.IPCPrivate {
		t := o.space.types[ops.Shm].table
		t.Remove(o.Idx)
		o.Key = ops.IPCPrivate
		t.Insert(o)
	}
}

// exit is the shm part of a task's exit: exit_mm detaches every attachment
// it holds, then exit_shm.
func (ns *Namespace) exit(task uint8) {
	pid := ns.taskPID(task)
	for _, a := range slices.Clone(ns.shm.attached) {
		if a.task == pid {
			ns.detach(a)
		}
	}
	ns.unmapWindow(task, 0, math.MaxInt64)
	ns.exitShm(pid)
}

// exitShm is exit_shm: the segments the task created (in any namespace: a
// setns keeps them in its list) are orphaned, and destroyed where their
// namespace has shm_rmid_forced and nothing attaches them.
func (ns *Namespace) exitShm(pid ops.PID) {
	for _, sp := range ns.spaces {
		for _, o := range sp.types[ops.Shm].table.Listing() {
			if o.Creator != pid || o.Orphan {
				continue
			}
			o.Orphan = true
			if sp.rmidForced != 0 && ns.shmMayDestroy(o) {
				ns.shmDestroy(o)
			}
		}
	}
}

// setRmidForced writes kernel.shm_rmid_forced (0 or 1, else EINVAL); a
// value of 1 destroys the orphaned segments nobody has attached.
func (ns *Namespace) setRmidForced(v int64) ops.Errno {
	if v < 0 || v > 1 {
		return ops.EINVAL
	}
	ns.cur.rmidForced = v
	if v == 1 {
		for _, o := range ns.cur.types[ops.Shm].table.Listing() {
			if o.Orphan && ns.shmMayDestroy(o) {
				ns.shmDestroy(o)
			}
		}
	}
	return ops.OK
}

// shmctl is ksys_shmctl with the commands of ops.ShmCmd.
func (ns *Namespace) shmctl(op ops.Op) ops.Result {
	if int32(op.Obj.ID) < 0 || op.Cmd == ops.ShmInvalid {
		return ops.Result{Err: ops.EINVAL} // a negative id or command, before anything is looked up
	}
	if !op.BadBuf {
		return ns.shmctlCall(op)
	}
	switch op.Cmd {
	case ops.ShmIPCSet:
		return ops.Result{Err: ops.EFAULT} // IPC_SET copies its struct in before the lookup
	case ops.ShmIPCStat, ops.ShmStat, ops.ShmStatAny, ops.ShmIPCInfo, ops.ShmInfoCmd:
		// These only read: the copy-out after every check fails.
		if r := ns.shmctlCall(op); r.Err != ops.OK {
			return r
		}
		return ops.Result{Err: ops.EFAULT}
	}
	return ns.shmctlCall(op) // SHM_LOCK, SHM_UNLOCK take no buffer
}

// shmctlCall is shmctl with a good buffer, after the argument checks.
func (ns *Namespace) shmctlCall(op ops.Op) ops.Result {
	s := ns.cur.types[ops.Shm]
	id := int64(int32(op.Obj.ID))
	switch op.Cmd {
	case ops.ShmIPCInfo:
		limit := uint64(s.limit)
		return ops.Result{ID: s.maxIdx(), Info: ops.ShmInfo{
			Shmmax: ops.DefaultShmmax, Shmmin: ops.ShmSegMin, Shmmni: limit, Shmseg: limit, Shmall: ops.DefaultShmall,
		}}
	case ops.ShmInfoCmd:
		var rss int64
		for _, o := range s.table.Listing() {
			rss += int64(len(o.Touched))
		}
		return ops.Result{ID: s.maxIdx(), Info: ops.ShmInfo{UsedIDs: int64(s.table.Len()), ShmTot: ns.cur.shmTot, ShmRss: rss}}
	case ops.ShmStat, ops.ShmStatAny:
		o := s.table.Get(ops.IDIdx(id))
		if o == nil {
			return ops.Result{Err: ops.EINVAL}
		}
		if op.Cmd == ops.ShmStat && !permitted(o, op.As, 0o444) {
			return ops.Result{Err: ops.EACCES}
		}
		r := rowOf(ops.Shm, o)
		r.RSS = 0 // struct shmid64_ds has no rss
		return ops.Result{ID: o.ID(), Row: r}
	}
	o := s.lookup(id)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	switch op.Cmd {
	case ops.ShmIPCStat:
		if !permitted(o, op.As, 0o444) {
			return ops.Result{Err: ops.EACCES}
		}
		r := rowOf(ops.Shm, o)
		r.ID, r.RSS = 0, 0
		return ops.Result{Row: r}
	case ops.ShmIPCSet:
		if !ownerOrCreator(o, op.As) {
			return ops.Result{Err: ops.EPERM}
		}
		owner := uint32(op.Value)
		group := op.GroupOr(owner)
		if owner == math.MaxUint32 || group == math.MaxUint32 { // (uid_t)-1 maps to no user
			return ops.Result{Err: ops.EINVAL}
		}
		o.UID, o.GID = owner, group
		o.Mode = op.Mode & 0o777
		o.Ctime = true
		return ops.Result{}
	case ops.ShmLock, ops.ShmUnlock:
		// Without CAP_IPC_LOCK: the owner or the creator only (and, for
		// SHM_LOCK, a non-zero RLIMIT_MEMLOCK, which every task has).
		if op.As != 0 && op.As != o.UID && op.As != o.Owner {
			return ops.Result{Err: ops.EPERM}
		}
		o.Locked = op.Cmd == ops.ShmLock
		return ops.Result{}
	}
	return ops.Result{Err: ops.EINVAL}
}

// rowOf is the /proc/sysvipc line of o.
func rowOf(t ops.IPCType, o *Obj) ops.Row {
	r := ops.Row{
		Key: o.Key, ID: o.ID(), Mode: o.Mode, Size: o.Size,
		UID: o.UID, GID: o.GID, CUID: o.Owner, CGID: o.Owner, Ctime: o.Ctime,
	}
	if t == ops.Sem {
		r.Atime, r.Ctime = o.Sem.Otime(), o.Sem.Ctime()
	}
	if t != ops.Shm {
		return r
	}
	if o.Dest {
		r.Mode |= ops.ShmDest
	}
	if o.Locked {
		r.Mode |= ops.ShmLocked
	}
	r.Cpid, r.Lpid, r.Nattch = o.Cpid, o.Lpid, o.Nattch
	r.Atime, r.Dtime = o.Atime, o.Dtime
	r.RSS = int64(len(o.Touched)) * ops.PageSize
	return r
}

// shmSnapshot is the namespace-wide shm state: the sysctl, shm_tot and the
// live attachments in canonical order.
func (ns *Namespace) shmSnapshot() ops.ShmState {
	st := ops.ShmState{RmidForced: ns.cur.rmidForced, Tot: ns.cur.shmTot}
	for _, a := range ns.shm.attached {
		h := a.att
		if !ns.named(a) {
			h = 0 // its handle was bound again by a later shmat
		}
		st.Attachments = append(st.Attachments, ops.Attachment{Att: h, Task: a.task, ID: a.obj.ID(), NS: a.obj.space.seq})
	}
	for _, vs := range ns.shm.win {
		for _, v := range vs {
			h := v.a.att
			if !ns.named(v.a) || v.start != v.a.page {
				h = 0 // another shmat's handle now, or a piece that does not start where it was attached
			}
			st.Attachments = append(st.Attachments, ops.Attachment{Att: h, Task: v.a.task, ID: v.a.obj.ID(), At: v.start + 1, Pages: v.end - v.start, NS: v.a.obj.space.seq})
		}
	}
	ops.SortAttachments(st.Attachments)
	return st
}
