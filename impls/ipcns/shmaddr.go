package ipcns

import (
	"math"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Attachments at window addresses, shmdt by address, reads and writes
// through attachments, and SHM_HUGETLB (ipc/shm.c do_shmat, ksys_shmdt,
// newseg).

// shmVMA is one shm mapping in a task's window: window pages [start, end)
// showing the segment from page pgoff on. A SHM_REMAP over part of an
// attachment splits it into pieces that keep their offsets.
type shmVMA struct {
	start, end, pgoff int64
	a                 *attachment
}

// origin is the window page where the attachment a piece belongs to starts
// the segment: what ksys_shmdt matches against its address.
func (v *shmVMA) origin() int64 { return v.start - v.pgoff }

// overlaps reports whether any VMA of the task's window meets [lo, hi).
func (ns *Namespace) overlaps(task uint8, lo, hi int64) bool {
	for _, v := range ns.shm.win[task] {
		if v.start < hi && lo < v.end {
			return true
		}
	}
	return false
}

// insertVMA adds v to the task's window, in start order.
func (ns *Namespace) insertVMA(task uint8, v *shmVMA) {
	vs := ns.shm.win[task]
	i, _ := slices.BinarySearchFunc(vs, v.start, func(x *shmVMA, s int64) int { return int(x.start - s) })
	ns.shm.win[task] = slices.Insert(vs, i, v)
}

// unmapWindow is munmap of window pages [lo, hi) of a task: a VMA cut in
// two gains a piece (shm_open of the split), one inside goes (shm_close).
// The splits come first, the closes after (vms_gather_munmap_vmas, then the
// close of what was gathered).
func (ns *Namespace) unmapWindow(task uint8, lo, hi int64) {
	pid := ns.taskPID(task)
	var keep, gone []*shmVMA
	for _, v := range ns.shm.win[task] {
		if v.end <= lo || v.start >= hi {
			keep = append(keep, v)
			continue
		}
		if v.start < lo {
			left := *v
			left.end = lo
			keep = append(keep, &left)
			v = &shmVMA{start: lo, end: v.end, pgoff: v.pgoff + lo - v.start, a: v.a}
			ns.shmOpen(v.a.obj, pid)
		}
		if v.end > hi {
			right := &shmVMA{start: hi, end: v.end, pgoff: v.pgoff + hi - v.start, a: v.a}
			keep = append(keep, right)
			v.end = hi
			ns.shmOpen(v.a.obj, pid)
		}
		gone = append(gone, v)
	}
	slices.SortFunc(keep, func(x, y *shmVMA) int { return int(x.start - y.start) })
	ns.shm.win[task] = keep
	for _, v := range gone {
		ns.shmClose(v.a.obj, pid)
	}
}

// shmdtWindow is ksys_shmdt at window page p: the first shm VMA above p
// whose segment would start at p goes, then every later piece of the same
// attachment within the segment's size.
func (ns *Namespace) shmdtWindow(task uint8, p int64) ops.Errno {
	pid := ns.taskPID(task)
	vs := ns.shm.win[task]
	first := -1
	for i, v := range vs {
		if v.end > p && v.origin() == p {
			first = i
			break
		}
	}
	if first < 0 {
		return ops.EINVAL
	}
	a := vs[first].a
	size := ops.Pages(a.obj.Size)
	gone := []*shmVMA{vs[first]}
	for _, v := range vs[first+1:] {
		if v.end-p > size {
			break
		}
		if v.origin() == p && v.a == a {
			gone = append(gone, v)
		}
	}
	ns.shm.win[task] = slices.DeleteFunc(vs, func(v *shmVMA) bool { return slices.Contains(gone, v) })
	for _, v := range gone {
		ns.shmClose(v.a.obj, pid)
	}
	return ops.OK
}

// shmAddress is where an address of an operation lands in its task: a
// window page (win), an attachment where the kernel chose (far), or
// neither (page 1 or NULL, where nothing is mapped); off bytes into it.
type shmAddress struct {
	win  bool
	page int64
	far  *attachment
	off  int64
}

// resolveAddr turns an operation's address into one of its task.
func (ns *Namespace) resolveAddr(op ops.Op) shmAddress {
	a := op.Addr
	if op.Att == 0 {
		if a.Win {
			return shmAddress{win: true, page: a.Page, off: a.Off}
		}
		return shmAddress{off: a.Off}
	}
	if p, ok := ns.shm.winPage[op.Att]; ok {
		return shmAddress{win: true, page: p, off: a.Off}
	}
	// The handle's shmat, or a fork's copy of it (the same address) in
	// this task.
	origin, pid := ns.shm.atts[op.Att], ns.taskPID(op.Task)
	if i := slices.IndexFunc(ns.shm.attached, func(x *attachment) bool { return origin != nil && x.origin == origin && x.task == pid }); i >= 0 {
		return shmAddress{far: ns.shm.attached[i], off: a.Off}
	}
	return shmAddress{off: a.Off} // page 1 (+ off): nothing mapped
}

// shmAccess is a read or a write of one byte by a task: a fault where
// nothing is mapped or a write meets a read-only mapping; otherwise the
// page becomes resident and the byte is read or written.
func (ns *Namespace) shmAccess(op ops.Op) ops.Result {
	addr := ns.resolveAddr(op)
	var a *attachment
	var off int64
	switch {
	case addr.far != nil:
		a, off = addr.far, addr.off
	case addr.win:
		for _, v := range ns.shm.win[op.Task] {
			if v.start <= addr.page && addr.page < v.end {
				a, off = v.a, (addr.page-v.start+v.pgoff)*ops.PageSize+addr.off
			}
		}
	}
	write := op.Kind == ops.KindShmWrite
	if a == nil || (write && !a.write) {
		return ops.Result{Shm: ops.ShmResult{Fault: true}}
	}
	o := a.obj
	if o.Touched == nil {
		o.Touched, o.Data = map[int64]bool{}, map[int64]uint8{}
	}
	o.Touched[off/ops.PageSize] = true
	if write {
		o.Data[off] = uint8(op.Value)
		return ops.Result{}
	}
	return ops.Result{Shm: ops.ShmResult{Val: o.Data[off]}}
}

// hugeFacts reads the huge page facts: the pages SHM_HUGETLB may reserve
// (0 when not reported) and the size of one in small pages (2 MiB).
func hugeFacts(fs ops.Facts) [2]int64 {
	free, _ := fs.Get(ops.FactHugePages)
	kib, ok := fs.Get(ops.FactHugePageKiB)
	if !ok || kib <= 0 {
		kib = 2048
	}
	return [2]int64{free, kib * 1024 / ops.PageSize}
}

// hugeNeed is how many huge pages a SHM_HUGETLB segment of size bytes
// reserves (its size rounded up to a huge page; a size past LLONG_MAX is
// a loff_t that no reservation takes).
func (ns *Namespace) hugeNeed(size int64) int64 {
	if size < 0 {
		return math.MaxInt64
	}
	hp := ns.shm.hugePages * ops.PageSize
	return (size-1)/hp + 1
}

// hugeReserve is the SHM_HUGETLB branch of newseg: no hugetlbfs is EINVAL
// (no huge page size), a caller without CAP_IPC_LOCK outside
// hugetlb_shm_group (gid 0) EPERM, too few free huge pages ENOMEM.
func (ns *Namespace) hugeReserve(op ops.Op) ops.Errno {
	switch {
	case ns.shm.hugeFree < 0:
		return ops.EINVAL
	case op.As != 0:
		return ops.EPERM
	case ns.hugeNeed(op.Size) > ns.shm.hugeFree:
		return ops.ENOMEM
	}
	return ops.OK
}
