//go:build linux && amd64

package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// The shm windows (ops.ShmWindowPages pages each): a task process's is at
// taskWindowBase of its own address space; the worker's (t0) is in this
// process, which other Models share, so each ns claims one of its own
// among workerWindowSlots slots from workerWindowBase on. A window is
// claimed by mapping it with a page on each side PROT_NONE and
// MAP_FIXED_NOREPLACE (which fails where anything is mapped), then
// unmapping its inside: the guard pages stay, so that an attachment that
// would reach past the window overlaps a mapping, and the next claim in
// this process sees the slot taken. Nothing else ever maps there: the
// kernel places what it chooses top-down from far above, the Go runtime's
// heap grows from 0xc000000000.
const (
	taskWindowBase    = 0x240000000000
	workerWindowBase  = 0x250000000000
	workerWindowSlots = 256
	windowStride      = 1 << 32
	shmRnd            = 0o20000
	shmRemap          = 0o40000
	shmHugetlb        = 0o4000
	mapFixedNoreplace = 0x100000
	windowBytes       = ops.ShmWindowPages * ops.PageSize
)

// errWindowTaken is a window slot where something is mapped already.
var errWindowTaken = errors.New("taken")

// claimWindow maps the guards of a window at base in this process.
func claimWindow(base uintptr) error {
	lo, size := base-ops.PageSize, uintptr(windowBytes+2*ops.PageSize)
	r, _, e := unix.Syscall6(unix.SYS_MMAP, lo, size, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|mapFixedNoreplace, ^uintptr(0), 0)
	switch {
	case e == unix.EEXIST:
		return errWindowTaken
	case e != 0:
		return e
	case r != lo: // a kernel before 4.17 takes the flag as a hint
		unix.Syscall(unix.SYS_MUNMAP, r, size, 0)
		return errWindowTaken
	}
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, base, windowBytes, 0); e != 0 {
		return fmt.Errorf("clearing the shm window at %#x: %w", base, e)
	}
	return nil
}

// workerWindow returns the worker's window, claiming one at first use.
func (n *ns) workerWindow() (uintptr, error) {
	if n.win != 0 {
		return n.win, nil
	}
	for i := range workerWindowSlots {
		base := uintptr(workerWindowBase + i*windowStride)
		err := claimWindow(base)
		if err == nil {
			n.win = base
			return base, nil
		}
		if !errors.Is(err, errWindowTaken) {
			return 0, fmt.Errorf("kernel: the worker's shm window: %w", err)
		}
	}
	return 0, fmt.Errorf("kernel: no free shm window among %d slots from %#x", workerWindowSlots, workerWindowBase)
}

// releaseWorkerWindow unmaps the worker's window and its guards.
func (n *ns) releaseWorkerWindow() {
	if n.win != 0 {
		unix.Syscall(unix.SYS_MUNMAP, n.win-ops.PageSize, windowBytes+2*ops.PageSize, 0)
		n.win = 0
	}
}

// windowOf returns the base of task t's window, mapping its guards in the
// task's process at first use there.
func (n *ns) windowOf(t uint8) (uintptr, error) {
	if t == 0 {
		return n.workerWindow()
	}
	p, err := n.tasks.get(int(t))
	if err != nil {
		return 0, err
	}
	if p.Window {
		return taskWindowBase, nil
	}
	lo, size := uint64(taskWindowBase-ops.PageSize), uint64(windowBytes+2*ops.PageSize)
	for _, c := range [][6]uint64{
		{lo, size, unix.PROT_NONE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | mapFixedNoreplace, ^uint64(0), 0},
	} {
		resp, err := p.Call(&task.Req{Kind: task.KindCall, Nr: unix.SYS_MMAP, Args: c}, nil)
		if err != nil {
			return 0, err
		}
		if resp.Errno != 0 || resp.R != lo {
			return 0, fmt.Errorf("kernel: task t%d (pid %d): its shm window at %#x is taken (%v)", t, p.Pid(), taskWindowBase, unix.Errno(resp.Errno))
		}
	}
	if err := clearTaskWindow(p); err != nil {
		return 0, err
	}
	p.Window = true
	return taskWindowBase, nil
}

// clearTaskWindow unmaps the inside of a task process's window (the
// request a release sends first, releaseReq).
func clearTaskWindow(p *task.Proc) error {
	var clear releaseReq
	resp, err := p.Call(clear.req(), nil)
	if err != nil {
		return err
	}
	return clear.check(p, resp)
}

// windowClearReq is the request that unmaps the inside of a task's window.
func windowClearReq() *task.Req {
	return &task.Req{Kind: task.KindCall, Nr: unix.SYS_MUNMAP, Args: [6]uint64{taskWindowBase, windowBytes}}
}

// shmatAt is the address argument of a shmat and whether it is in the
// task's window.
func (n *ns) shmatAt(op ops.Op) (addr, base uintptr, err error) {
	a := op.Addr
	switch {
	case op.Flags&ops.ShmatBadAddr != 0:
		return unalignedAt, 0, nil
	case a.Win:
		if base, err = n.windowOf(op.Task); err != nil {
			return 0, 0, err
		}
		return base + uintptr(a.Page)*ops.PageSize + uintptr(a.Off), base, nil
	case a.Off != 0 && op.Flags&ops.ShmatRnd != 0 && op.Flags&ops.ShmatRemap == 0:
		return 0, 0, fmt.Errorf("shmat at %#x with rnd and without remap would map page 0", a.Off)
	}
	return uintptr(a.Off), 0, nil
}

// remapFits refuses a SHM_REMAP at a window address whose segment would
// reach past the window: MAP_FIXED there would replace what is not the
// script's. It reads the segment's size (IPC_STAT as root, which changes
// nothing); a segment it cannot stat fails the shmat before any mapping.
func (n *ns) remapFits(op ops.Op) error {
	if op.Flags&ops.ShmatRemap == 0 || !op.Addr.Win {
		return nil
	}
	size, ok, err := n.shmSize(op.Task, op.Obj.ID)
	if err != nil || !ok {
		return err
	}
	if op.Addr.Page+ops.Pages(size) > ops.ShmWindowPages {
		return fmt.Errorf("shmat at w:%d with remap: the segment's %d bytes would reach past the window of %d pages, which the kernel side does not map over", op.Addr.Page, size, ops.ShmWindowPages)
	}
	return nil
}

// resolveAddr is the address op names in its task (see ops.ShmAddr): the
// address, and the attachment where the kernel chose it names, if any.
func (n *ns) resolveAddr(op ops.Op) (uintptr, *kattach, error) {
	a := op.Addr
	if op.Att == 0 {
		if !a.Win {
			return uintptr(a.Off), nil, nil
		}
		base, err := n.windowOf(op.Task)
		return base + uintptr(a.Page)*ops.PageSize + uintptr(a.Off), nil, err
	}
	if p, ok := n.shm.winPage[op.Att]; ok {
		base, err := n.windowOf(op.Task)
		return base + uintptr(p)*ops.PageSize + uintptr(a.Off), nil, err
	}
	// The handle's shmat, or a fork's copy of it (the same address) in
	// this task.
	if origin := n.shm.atts[op.Att]; origin != nil && !origin.win {
		for _, k := range n.shm.attached {
			if k.origin == origin && k.task == int(op.Task) {
				return k.addr + uintptr(a.Off), k, nil
			}
		}
	}
	return notAttached + uintptr(a.Off), nil, nil
}

// touch reads or writes one byte at the address op names.
func (n *ns) touch(op ops.Op) (ops.Result, unix.Errno, error) {
	addr, _, err := n.resolveAddr(op)
	if err != nil {
		return ops.Result{}, 0, err
	}
	write := op.Kind == ops.KindShmWrite
	var r ops.Result
	if op.Task == 0 {
		v, fault := task.Touch(addr, write, uint8(op.Value))
		r.Shm = ops.ShmResult{Val: v, Fault: fault}
	} else {
		p, err := n.tasks.get(int(op.Task))
		if err != nil {
			return r, 0, err
		}
		w := uint64(0)
		if write {
			w = 1
		}
		resp, err := p.Call(&task.Req{Kind: task.KindTouch, Args: [6]uint64{uint64(addr), w, uint64(uint8(op.Value))}}, nil)
		if err != nil {
			return r, 0, err
		}
		r.Shm = ops.ShmResult{Val: uint8(resp.R), Fault: resp.Errno == task.TouchFault}
	}
	if r.Shm.Fault || write {
		r.Shm.Val = 0
	}
	return r, 0, nil
}

// inWindow returns the window page of addr in the window at base, if it
// is in it.
func inWindow(addr, base uintptr) (int64, bool) {
	if base == 0 || addr < base || addr >= base+windowBytes {
		return 0, false
	}
	return int64((addr - base) / ops.PageSize), true
}

// forgetAt drops the attachments task t made at [lo, hi): gone, or their
// first page replaced (no VMA can start where they were attached).
func (n *ns) forgetAt(t int, lo, hi uintptr) {
	for _, k := range append([]*kattach(nil), n.shm.attached...) {
		if k.task == t && k.addr >= lo && k.addr < hi {
			n.forget(k)
		}
	}
}

// hugetlbSafe refuses a SHM_HUGETLB shmget where it could allocate huge
// pages (nr_overcommit_hugepages set: a reservation past the free pool
// allocates surplus pages); otherwise it only reserves free ones, or fails.
func hugetlbSafe() error {
	b, err := os.ReadFile("/proc/sys/vm/nr_overcommit_hugepages")
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return nil
	}
	return errors.New("kernel: a SHM_HUGETLB shmget where vm.nr_overcommit_hugepages is set would allocate huge pages on this machine: the kernel side does not run it")
}
