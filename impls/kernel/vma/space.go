//go:build linux && amd64

package vma

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/madv"
	"strconv"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// regionOf is the region of a range.
func regionOf(a ops.VMAArgs) uint32 {
	switch a.Region() {
	case ops.RegionHeap:
		return regionHeap
	case ops.RegionTHP:
		return regionTHP
	}
	return regionWindow
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// rangeRequest is the request of an operation on a checked range of a
// region.
func rangeRequest(op uint32, a ops.VMAArgs, args ...int64) (request, error) {
	if err := ops.CheckVMAArgs(a); err != nil {
		return request{}, err
	}
	q := request{op: op, region: regionOf(a), start: a.Start, pages: a.Pages}
	copy(q.a[:], args)
	return q, nil
}

// rangeCall is a request on a checked range of a region.
func (h *Helper) rangeCall(op uint32, a ops.VMAArgs, args ...int64) (ops.Errno, error) {
	q, err := rangeRequest(op, a, args...)
	if err != nil {
		return 0, err
	}
	return h.errnoCall(q)
}

// requestOf is the one request the call for op sends the helper, as each
// method below makes it (the same functions), and false for an operation
// whose call sends none, or another first (an advice the vocabulary does
// not know, arguments out of range), or whose answer the Go side must act
// on before the helper goes on (a fork: its child is adopted, and one the
// driver never adopted would outlive a kill). Pipeline sends requests
// ahead with it.
func requestOf(op ops.Op) (request, bool) {
	a := op.VMA
	var q request
	var err error
	switch op.Kind {
	case ops.KindMap:
		q, err = mapRequest(a)
	case ops.KindUnmap:
		q, err = rangeRequest(opUnmap, a)
	case ops.KindProtect:
		q, err = rangeRequest(opProtect, a, int64(a.Prot))
	case ops.KindTouch:
		q, err = touchRequest(a)
	case ops.KindAdvise:
		n, ok := madvNumber(a.Advice)
		if !ok {
			return request{}, false
		}
		q, err = rangeRequest(opAdvise, a, n)
	case ops.KindLock:
		q, err = rangeRequest(opLock, a, b2i(a.OnFault))
	case ops.KindUnlock:
		q, err = rangeRequest(opUnlock, a)
	case ops.KindRemap:
		q, err = remapRequest(a)
	case ops.KindBrk:
		q, err = rangeRequest(opBrk, a, a.Break, a.BreakBytes)
	case ops.KindSeal:
		q, err = rangeRequest(opSeal, a)
	case ops.KindMemlock:
		q, err = memlockRequest(a)
	case ops.KindOpen:
		q, err = fileRequest(opOpen, op.FileArgs())
	case ops.KindReopen:
		q, err = fileRequest(opReopen, op.FileArgs())
	case ops.KindDup:
		q, err = fileRequest(opDup, op.FileArgs())
	case ops.KindLayout:
		q = request{op: opState}
	default:
		return request{}, false
	}
	return q, err == nil
}

func mapRequest(a ops.VMAArgs) (request, error) {
	return rangeRequest(opMap, a, int64(a.Prot), int64(a.Flags), int64(a.File), a.Offset)
}

// Map implements ops.AddressSpace.
func (h *Helper) Map(a ops.VMAArgs) (ops.Errno, error) {
	q, err := mapRequest(a)
	if err != nil {
		return 0, err
	}
	return h.errnoCall(q)
}

// Unmap implements ops.AddressSpace.
func (h *Helper) Unmap(a ops.VMAArgs) (ops.Errno, error) { return h.rangeCall(opUnmap, a) }

// Protect implements ops.AddressSpace.
func (h *Helper) Protect(a ops.VMAArgs) (ops.Errno, error) {
	return h.rangeCall(opProtect, a, int64(a.Prot))
}

func touchRequest(a ops.VMAArgs) (request, error) {
	a.Pages = 1
	return rangeRequest(opTouch, a, b2i(a.Write))
}

// Touch implements ops.AddressSpace.
func (h *Helper) Touch(a ops.VMAArgs) (ops.Errno, error) {
	q, err := touchRequest(a)
	if err != nil {
		return 0, err
	}
	return h.errnoCall(q)
}

// madvNumber is the MADV_* number of an advice (internal/madv).
func madvNumber(a ops.VMAAdvice) (int64, bool) { return madv.Number(a) }

// Advise implements ops.AddressSpace; an advice the vocabulary does not
// know is EINVAL, as for the kernel an unknown number is.
func (h *Helper) Advise(a ops.VMAArgs) (ops.Errno, error) {
	n, ok := madvNumber(a.Advice)
	if !ok {
		if err := ops.CheckVMAArgs(a); err != nil {
			return 0, err
		}
		return ops.EINVAL, nil
	}
	return h.rangeCall(opAdvise, a, n)
}

// Lock implements ops.AddressSpace.
func (h *Helper) Lock(a ops.VMAArgs) (ops.Errno, error) {
	return h.rangeCall(opLock, a, b2i(a.OnFault))
}

// Unlock implements ops.AddressSpace.
func (h *Helper) Unlock(a ops.VMAArgs) (ops.Errno, error) { return h.rangeCall(opUnlock, a) }

// remapRequest is mremap's request: resized in place, moved to a fixed
// target, or where the kernel picks, each perhaps with MREMAP_DONTUNMAP.
func remapRequest(a ops.VMAArgs) (request, error) {
	how := b2i(a.DontUnmap) * remapDontUnmap
	if a.MayMove {
		return rangeRequest(opRemap, a, a.NewPages, how|remapMayMove)
	}
	return rangeRequest(opRemap, a, a.NewPages, how|b2i(a.Fixed)*remapFixed, a.Target)
}

// Remap implements ops.AddressSpace.
func (h *Helper) Remap(a ops.VMAArgs) (ops.Errno, error) {
	if a.MayMove {
		_, e, err := h.RemapMayMove(a)
		return e, err
	}
	q, err := remapRequest(a)
	if err != nil {
		return 0, err
	}
	return h.errnoCall(q)
}

// RemapMayMove implements ops.AddressSpace: the helper fills every gap
// above the window for the call, so that the kernel's top-down search
// finds the window first, and unmaps a range that landed below it.
func (h *Helper) RemapMayMove(a ops.VMAArgs) (int64, ops.Errno, error) {
	a.MayMove = true
	q, err := remapRequest(a)
	if err != nil {
		return 0, 0, err
	}
	r, err := h.call(q)
	if err != nil || r.err != 0 {
		return 0, ops.Errno(r.err), err
	}
	return r.val, ops.OK, nil
}

// Brk implements ops.AddressSpace.
func (h *Helper) Brk(a ops.VMAArgs) (ops.Errno, error) {
	return h.rangeCall(opBrk, a, a.Break, a.BreakBytes)
}

func fileRequest(op uint32, f ops.VMAFileArgs) (request, error) {
	if err := ops.CheckVMAFileArgs(f); err != nil {
		return request{}, err
	}
	return request{op: op, a: [4]int64{int64(f.Handle), int64(f.Of), b2i(f.ReadOnly)}}, nil
}

// fileCall binds a handle; the inode it returns identifies the file.
func (h *Helper) fileCall(op uint32, f ops.VMAFileArgs) (ops.Errno, error) {
	q, err := fileRequest(op, f)
	if err != nil {
		return 0, err
	}
	r, err := h.call(q)
	if err != nil || r.err != 0 {
		return ops.Errno(r.err), err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ino := uint64(r.val)
	if _, known := h.inodes[ino]; !known {
		if op != opOpen {
			return 0, fmt.Errorf("vma helper: handle %d: a new file (inode %d) from reopen or dup", f.Handle, ino)
		}
		h.inodes[ino] = len(h.inodes) + 1
	}
	return ops.OK, nil
}

// Open implements ops.AddressSpace.
func (h *Helper) Open(f ops.VMAFileArgs) (ops.Errno, error) { return h.fileCall(opOpen, f) }

// Reopen implements ops.AddressSpace.
func (h *Helper) Reopen(f ops.VMAFileArgs) (ops.Errno, error) { return h.fileCall(opReopen, f) }

// Dup implements ops.AddressSpace.
func (h *Helper) Dup(f ops.VMAFileArgs) (ops.Errno, error) { return h.fileCall(opDup, f) }

// ErrSealed is Reset's error when a sealed VMA stays in the window or the
// heap area: no call removes it, only a new helper starts clean
// (Restarting does that).
var ErrSealed = errors.New("vma helper: a sealed VMA stays after the reset")

// ErrLockedLeft is Reset's error when the process still counts locked
// memory with nothing of the script left: the kernel leaked mm->locked_vm
// (a MREMAP_DONTUNMAP of a locked VMA, docs/kernel-bugs.md), and every
// later script would meet RLIMIT_MEMLOCK early; only a new helper starts
// clean (Restarting does that).
var ErrLockedLeft = errors.New("vma helper: locked memory still counted after the reset (VmLck)")

// lockedLeft is the helper's reset answer for ErrLockedLeft
// (ENOTRECOVERABLE).
const lockedLeft = 131

// Reset implements ops.AddressSpace; ErrSealed if something sealed stays,
// ErrLockedLeft if locked memory is still counted.
func (h *Helper) Reset() error {
	r, err := h.call(request{op: opReset})
	if err != nil {
		return err
	}
	if r.err == int32(ops.EPERM) {
		return ErrSealed
	}
	if r.err == lockedLeft {
		return ErrLockedLeft
	}
	if r.err != 0 {
		return fmt.Errorf("vma helper %d: reset: errno %d", h.pid, r.err)
	}
	h.mu.Lock()
	h.inodes = map[uint64]int{}
	h.mu.Unlock()
	return nil
}

// State implements ops.AddressSpace: the VMAs smaps shows in the window and
// the heap area.
func (h *Helper) State() (ops.VMAState, error) {
	r, err := h.call(request{op: opState})
	if err != nil {
		return ops.VMAState{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st, err := h.parseState(r.payload, uint64(r.val))
	if err != nil {
		return st, fmt.Errorf("vma helper %d: state: %w", h.Pid(), err)
	}
	return st, nil
}

// smapsVMA is one VMA as smaps shows it.
type smapsVMA struct {
	start, end uint64
	perms      string
	offset     uint64
	inode      uint64
	path       string
	pkey       int
	vmflags    []string
}

// parseSmaps reads the lines the helper selected: a header, then
// ProtectionKey and VmFlags lines.
func parseSmaps(text []byte) ([]smapsVMA, error) {
	var out []smapsVMA
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(k, " -") {
			if len(out) == 0 {
				return nil, fmt.Errorf("%q before any VMA", line)
			}
			last := &out[len(out)-1]
			switch k {
			case "VmFlags":
				last.vmflags = strings.Fields(v)
			case "ProtectionKey":
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return nil, fmt.Errorf("bad line %q", line)
				}
				last.pkey = n
			}
			continue
		}
		v, err := parseHeader(line)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// parseHeader reads "start-end perms offset dev inode [path]".
func parseHeader(line string) (smapsVMA, error) {
	var v smapsVMA
	f := strings.Fields(line)
	if len(f) < 5 {
		return v, fmt.Errorf("bad header %q", line)
	}
	s, e, ok := strings.Cut(f[0], "-")
	var err1, err2, err3, err4 error
	v.start, err1 = strconv.ParseUint(s, 16, 64)
	v.end, err2 = strconv.ParseUint(e, 16, 64)
	v.offset, err3 = strconv.ParseUint(f[2], 16, 64)
	v.inode, err4 = strconv.ParseUint(f[4], 10, 64)
	if !ok || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return v, fmt.Errorf("bad header %q", line)
	}
	v.perms = f[1]
	if len(f) > 5 {
		v.path = strings.Join(f[5:], " ")
	}
	return v, nil
}

// parseState turns the helper's smaps lines into the observable.
func (h *Helper) parseState(text []byte, brk uint64) (ops.VMAState, error) {
	above := int64(brk) - int64(h.startBrk) // never below start_brk
	st := ops.VMAState{Brk: above / pageSize, BrkBytes: above % pageSize}
	vmas, err := parseSmaps(text)
	if err != nil {
		return st, err
	}
	shm := map[uint64]int{}
	st.VMAs, err = ops.ObserveVMAs(vmas, func(sv smapsVMA) (ops.VMA, error) { return h.observe(sv, shm) })
	return st, err
}

// observe places a VMA in its region and names its file.
func (h *Helper) observe(sv smapsVMA, shm map[uint64]int) (ops.VMA, error) {
	var v ops.VMA
	wb, hb, tb := h.opt.WindowBase, h.startBrk, h.opt.THPBase
	switch {
	case sv.start >= wb && sv.end <= wb+ops.VMAWindowPages*pageSize:
		v.Start, v.End = int64(sv.start-wb)/pageSize, int64(sv.end-wb)/pageSize
	case sv.start >= hb && sv.end <= hb+ops.VMAHeapPages*pageSize:
		v.Heap = true
		v.Start, v.End = int64(sv.start-hb)/pageSize, int64(sv.end-hb)/pageSize
	case sv.start >= tb && sv.end <= tb+ops.VMATHPPages*pageSize:
		v.THP = true
		v.Start, v.End = int64(sv.start-tb)/pageSize, int64(sv.end-tb)/pageSize
	default:
		return v, fmt.Errorf("VMA %x-%x is not inside the window, the heap area or the THP area", sv.start, sv.end)
	}
	perms, err := ops.ParseVMAPerms(sv.perms)
	if err != nil {
		return v, err
	}
	v.Perms, v.Pkey, v.HeapLabel = perms, sv.pkey, sv.path == "[heap]"
	if err := h.nameFile(&v, sv, shm); err != nil {
		return v, err
	}
	var names []string
	for _, m := range sv.vmflags {
		switch {
		case isPermMnemonic(m):
		case !knownFlag(m): // any name a kernel prints is read
			names = append(names, ops.VMAFlagUnnamed)
		default:
			names = append(names, m)
		}
	}
	if len(names) == 0 {
		names = []string{"-"}
	}
	v.Flags, err = ops.ParseVMAFlags(strings.Join(names, ","))
	return v, err
}

// knownFlag reports whether m is a mnemonic of ops.VMAFlagNames.
func knownFlag(m string) bool {
	_, ok := ops.VMAFlag(m)
	return ok
}

func isPermMnemonic(m string) bool {
	for _, p := range ops.VMAPermMnemonics {
		if m == p {
			return true
		}
	}
	return false
}

// nameFile gives a file-backed VMA its identity: the ordinal of a script's
// file, or a shmem object numbered in order of appearance.
func (h *Helper) nameFile(v *ops.VMA, sv smapsVMA, shm map[uint64]int) error {
	if sv.inode == 0 {
		return nil
	}
	v.Offset = int64(sv.offset / pageSize)
	if n, ok := h.inodes[sv.inode]; ok {
		v.File = n
		return nil
	}
	if !strings.HasPrefix(sv.path, "/dev/zero") {
		return fmt.Errorf("VMA %x-%x maps a file no script opened: %s", sv.start, sv.end, sv.path)
	}
	if shm[sv.inode] == 0 {
		shm[sv.inode] = len(shm) + 1
	}
	v.Shm = shm[sv.inode]
	return nil
}

// MeasureBrkExpand runs the brk-expand workload in the helper (n one-page
// VMAs, a one-page heap, ops.BrkRounds rounds of brk up and down by a page
// per repetition) and returns each repetition's wall time; a brk costs
// WallNs/ops.BrkExpandCalls. It resets the address space first and after.
func (h *Helper) MeasureBrkExpand(n, reps int) (ops.Measurement, error) {
	r, err := h.call(request{op: opMeasure, a: [4]int64{int64(n), int64(reps), ops.BrkRounds}})
	if err != nil {
		return ops.Measurement{}, err
	}
	if r.err != 0 || len(r.payload) != 8*reps {
		return ops.Measurement{}, fmt.Errorf("vma helper %d: brk-expand: errno %d, %d bytes", h.Pid(), r.err, len(r.payload))
	}
	m := ops.Measurement{WallNs: make([]int64, reps)}
	for i := range m.WallNs {
		m.WallNs[i] = int64(le64(r.payload[8*i:]))
	}
	h.mu.Lock()
	h.inodes = map[uint64]int{}
	h.mu.Unlock()
	return m, nil
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Seal implements ops.AddressSpace: mseal, ENOSYS where the kernel has
// none (the helper calls it all the same).
func (h *Helper) Seal(a ops.VMAArgs) (ops.Errno, error) { return h.rangeCall(opSeal, a) }

// Memlock implements ops.AddressSpace: the helper lowers its
// RLIMIT_MEMLOCK and drops CAP_IPC_LOCK from its effective set; its reset
// puts both back.
func (h *Helper) Memlock(a ops.VMAArgs) (ops.Errno, error) {
	q, err := memlockRequest(a)
	if err != nil {
		return 0, err
	}
	return h.errnoCall(q)
}

func memlockRequest(a ops.VMAArgs) (request, error) {
	if err := ops.CheckVMAArgs(a); err != nil {
		return request{}, err
	}
	return request{op: opMemlock, a: [4]int64{a.Limit}}, nil
}

// Fork implements ops.AddressSpace: the helper forks; its child, a child
// of this process (CLONE_PARENT), serves from then on, and the parent
// exits.
func (h *Helper) Fork() (ops.Errno, error) {
	r, err := h.call(request{op: opFork})
	if err != nil {
		return 0, err
	}
	if r.err != 0 {
		return ops.Errno(r.err), nil
	}
	if err := h.adopt(int(r.val)); err != nil {
		h.mu.Lock()
		h.broken = err
		h.mu.Unlock()
		return 0, err
	}
	return ops.OK, nil
}
