package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// remapType is how mremap changes the length.
type remapType uint8

const (
	remapNoResize remapType = iota
	remapShrink
	remapExpand
)

// remapState is struct vma_remap_struct.
type remapState struct {
	vma            *VMA
	addr, newAddr  int64
	oldLen, newLen int64
	delta          int64
	fixed          bool
	mayMove        bool
	typ            remapType
	populateExpand bool
	// dontUnmap: MREMAP_DONTUNMAP, the source stays (dontunmapComplete).
	dontUnmap bool
}

// Remap implements ops.AddressSpace: mremap in place (no flags) or with
// MREMAP_MAYMOVE|MREMAP_FIXED to a.Target, either with MREMAP_DONTUNMAP.
func (s *Space) Remap(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	if dontUnmapRefused(a) {
		return ops.EINVAL, nil
	}
	if a.MayMove {
		_, errno, err := s.RemapMayMove(a)
		return errno, err
	}
	vrm := &remapState{addr: s.abs(a.Region(), a.Start), oldLen: a.Pages, newLen: a.NewPages, fixed: a.Fixed, dontUnmap: a.DontUnmap}
	if vrm.newLen == 0 {
		return ops.EINVAL, nil
	}
	if vrm.fixed {
		vrm.newAddr = s.abs(a.Region(), a.Target)
		if s.rules.Quirks&ops.QuirkRemapLookupFirst != 0 {
			errno := s.mremapToLookupFirst(vrm)
			if errno == ops.OK && vrm.populateExpand {
				start := vrm.newAddr + vrm.oldLen
				s.mmPopulate(start, start+vrm.delta, true)
			}
			return errno, nil
		}
		if vrm.addr < vrm.newAddr+vrm.newLen && vrm.newAddr < vrm.addr+vrm.oldLen {
			return ops.EINVAL, nil // the target overlaps the source
		}
		if vrm.oldLen == vrm.newLen && s.rules.Quirks&ops.QuirkMultiMove != 0 {
			return s.remapMove(vrm), nil
		}
	}
	vrm.vma = s.vmaLookup(vrm.addr)
	if errno := s.checkPrepVMA(vrm); errno != ops.OK {
		return errno, nil
	}
	var errno ops.Errno
	if vrm.fixed {
		errno = s.mremapTo(vrm)
	} else {
		errno = s.mremapAt(vrm)
	}
	if errno == ops.OK && vrm.populateExpand {
		start := vrm.newAddr + vrm.oldLen
		s.mmPopulate(start, start+vrm.delta, true)
	}
	return errno, nil
}

// dontUnmapRefused: MREMAP_DONTUNMAP is always a move (MREMAP_MAYMOVE)
// and never a resize; the syscall refuses it otherwise before anything.
func dontUnmapRefused(a ops.VMAArgs) bool {
	return a.DontUnmap && (!a.Fixed && !a.MayMove || a.NewPages != a.Pages)
}

// checkPrepVMA is check_prep_vma: the old range must start in a VMA and,
// if the operation maps anything new, lie inside it.
func (s *Space) checkPrepVMA(vrm *remapState) ops.Errno {
	v := vrm.vma
	if v == nil {
		return ops.EFAULT
	}
	if v.Flags&VMSealed != 0 {
		return ops.EPERM // mremap of a sealed VMA
	}
	switch {
	case vrm.oldLen == vrm.newLen:
		vrm.typ = remapNoResize
	case vrm.newLen < vrm.oldLen:
		vrm.typ, vrm.delta = remapShrink, vrm.oldLen-vrm.newLen
	default:
		vrm.typ, vrm.delta = remapExpand, vrm.newLen-vrm.oldLen
	}
	if !vrm.fixed {
		vrm.newAddr = vrm.addr
	}
	if vrm.typ != remapExpand && !vrm.fixed && !vrm.dontUnmap {
		return ops.OK
	}
	if vrm.oldLen == 0 && v.Flags&(VMShared|VMMayShare) == 0 {
		return ops.EINVAL
	}
	oldLen := vrm.oldLen
	if vrm.typ == remapShrink {
		oldLen = vrm.newLen
	}
	if oldLen > v.End-vrm.addr {
		return ops.EFAULT
	}
	if vrm.newLen == oldLen {
		return ops.OK
	}
	if v.Flags&VMLocked != 0 {
		vrm.populateExpand = true
	}
	if v.Flags&(VMDontExpand|VMPfnMap) != 0 {
		return ops.EFAULT
	}
	if !s.mlockFutureOK(v.Flags, vrm.newLen-oldLen) {
		return ops.EAGAIN
	}
	return ops.OK
}

// mremapAt resizes in place: shrinking unmaps the tail; growing needs the
// old range to end the VMA and free room after it.
func (s *Space) mremapAt(vrm *remapState) ops.Errno {
	switch vrm.typ {
	case remapShrink:
		_, _, errno := s.vmsGatherMunmapVMAs(vrm.addr+vrm.newLen, vrm.addr+vrm.oldLen)
		return errno
	case remapExpand:
		v := vrm.vma
		if v.End-vrm.addr != vrm.oldLen || !s.vmaExpandable(v, vrm.delta) {
			if !vrm.mayMove {
				return ops.ENOMEM
			}
			vrm.newAddr = s.unmappedAreaTopDown(vrm.newLen) // vrm_set_new_addr
			s.moveVMA(vrm)
			return ops.OK
		}
		if s.vmaMergeExtend(v, vrm.delta) == nil {
			return ops.ENOMEM
		}
	}
	return ops.OK
}

// vmaExpandable: nothing is mapped in the delta pages after v.
func (s *Space) vmaExpandable(v *VMA, delta int64) bool {
	next := s.layout.Find(v.End)
	return next == nil || next.Start >= v.End+delta
}

// vmaMergeExtend is vma_merge_extend: algorithm A for the extension of v,
// whose left neighbour is v itself.
func (s *Space) vmaMergeExtend(v *VMA, delta int64) *VMA {
	vmg := &mergeState{
		prev: v, next: s.layout.Find(v.End), start: v.End, end: v.End + delta,
		pgoff: v.Pgoff + v.Pages(), flags: v.Flags, file: v.File, anon: v.Anon,
	}
	return s.vmaMergeNewRange(vmg)
}

// mremapToLookupFirst is a fixed move in the order of 6.1 and 6.12
// (ops.QuirkRemapLookupFirst): the mremap syscall looks the source up
// (EFAULT) and, where mseal exists (6.12), refuses a sealed source
// (can_modify_vma, EPERM); mremap_to checks the overlap (EINVAL), unmaps
// the target and the tail of a shrinking source, each refused as a whole
// if it holds a sealed VMA (EPERM: nothing moves), and only then does
// vma_to_resize check the source range, so a move that fails there has
// unmapped its target. No such kernel moves a range over several VMAs
// (ops.QuirkMultiMove).
func (s *Space) mremapToLookupFirst(vrm *remapState) ops.Errno {
	v := s.vmaLookup(vrm.addr)
	if v == nil {
		return ops.EFAULT
	}
	if v.Flags&VMSealed != 0 {
		return ops.EPERM
	}
	if vrm.addr < vrm.newAddr+vrm.newLen && vrm.newAddr < vrm.addr+vrm.oldLen {
		return ops.EINVAL
	}
	if _, _, errno := s.vmsGatherMunmapVMAs(vrm.newAddr, vrm.newAddr+vrm.newLen); errno != ops.OK {
		return errno
	}
	if vrm.oldLen > vrm.newLen {
		if _, _, errno := s.vmsGatherMunmapVMAs(vrm.addr+vrm.newLen, vrm.addr+vrm.oldLen); errno != ops.OK {
			return errno
		}
		vrm.oldLen = vrm.newLen
	}
	vrm.vma = s.vmaLookup(vrm.addr)
	if errno := s.checkPrepVMA(vrm); errno != ops.OK {
		return errno
	}
	s.moveVMA(vrm)
	return ops.OK
}

// mremapTo moves to a fixed address: unmap the target, shrink the source
// if asked, then move.
func (s *Space) mremapTo(vrm *remapState) ops.Errno {
	if _, _, errno := s.vmsGatherMunmapVMAs(vrm.newAddr, vrm.newAddr+vrm.newLen); errno != ops.OK {
		return errno
	}
	if vrm.vma = s.vmaLookup(vrm.addr); vrm.vma == nil {
		return ops.EFAULT
	}
	if vrm.typ == remapShrink {
		if _, _, errno := s.vmsGatherMunmapVMAs(vrm.addr+vrm.newLen, vrm.addr+vrm.oldLen); errno != ops.OK {
			return errno
		}
		if vrm.vma = s.vmaLookup(vrm.addr); vrm.vma == nil {
			return ops.EFAULT
		}
		vrm.oldLen = vrm.newLen
	}
	s.moveVMA(vrm)
	return ops.OK
}

// moveVMA copies the VMA to the new address (merging there if it can),
// moves the pages (and their guard markers), then unmaps the source, or
// with MREMAP_DONTUNMAP keeps it (dontunmapComplete). A locked source of
// MREMAP_DONTUNMAP is split first, so that only the range is unlocked.
func (s *Space) moveVMA(vrm *remapState) {
	v := vrm.vma
	var lockedBefore int64
	if vrm.dontUnmap {
		lockedBefore = s.lockedVM()
	}
	if vrm.dontUnmap && v.Flags&VMLocked != 0 && s.rules.Quirks&ops.QuirkDontUnmapNoSplit == 0 {
		if v.Start != vrm.addr {
			s.splitVMA(v, vrm.addr, true)
		}
		if v.End != vrm.addr+vrm.oldLen {
			s.splitVMA(v, vrm.addr+vrm.oldLen, false)
		}
	}
	nv := s.copyVMA(v, vrm.newAddr, vrm.newLen, v.Pgoff+(vrm.addr-v.Start), vrm.dontUnmap)
	merged := nv.Start <= vrm.addr && vrm.addr < nv.End // the source merged into the copy
	if merged {
		v = nv
	}
	moved := map[int64]bool{}
	for p := vrm.addr; p < vrm.addr+vrm.oldLen; p++ {
		if s.guards[p] {
			moved[vrm.newAddr+p-vrm.addr] = true
			delete(s.guards, p)
		}
	}
	for p := range moved {
		s.guards[p] = true
	}
	if vrm.dontUnmap {
		locked := v.Flags&VMLocked != 0
		s.dontunmapComplete(v, vrm.addr, vrm.addr+vrm.oldLen, merged)
		if locked && s.rules.Quirks&ops.QuirkDontUnmapNoSplit != 0 {
			// 6.16's move_vma counts the copy's pages in locked_vm
			// (vrm_stat_account) and then unlocks the source VMA
			// without giving its pages back.
			s.leaked = lockedBefore + vrm.newLen - s.lockedPages()
		}
		return
	}
	s.vmsGatherMunmapVMAs(vrm.addr, vrm.addr+vrm.oldLen)
}

// dontunmapComplete is what MREMAP_DONTUNMAP leaves at the source v: the
// VMA stays, its pages gone, VM_LOCKED and VM_LOCKONFAULT cleared (merging
// with nothing); where it was exactly the range moved, and did not merge
// with its copy, its anon_vma chain is unlinked (unfaulted again) and an
// anonymous one takes its address as pgoff, as an unfaulted anonymous VMA
// has.
func (s *Space) dontunmapComplete(v *VMA, start, end int64, merged bool) {
	v.Flags &^= vmLockedMask
	if !merged && v.Start == start && v.End == end {
		v.Anon, v.ForkChild = nil, false
		if v.File == nil && s.rules.Quirks&ops.QuirkDontUnmapPgoffKept == 0 {
			v.Pgoff = v.Start
		}
	}
	s.layout.Store(v)
}

// copyVMA is copy_vma: place a copy of v's attributes at [addr, addr+pages),
// merging with the VMAs there (algorithm A, with v as copied_from) or
// making a new VMA that shares v's anon_vma. An unfaulted anonymous VMA
// takes its new address as pgoff, so that it may merge there; one that
// stays (keepSource, MREMAP_DONTUNMAP) must not merge with its copy: it
// is left out as prev or next, or where ops.QuirkDontUnmapApart (6.1)
// a copy beside it merges with nothing; where
// ops.QuirkDontUnmapSelfMerge (6.16 on) nothing keeps them apart.
func (s *Space) copyVMA(v *VMA, addr, pages, pgoff int64, keepSource bool) *VMA {
	unfaulted := v.File == nil && v.Anon == nil
	if unfaulted {
		pgoff = addr
	}
	vmg := &mergeState{
		prev: s.layout.Before(addr), next: s.layout.Find(addr), start: addr, end: addr + pages,
		pgoff: pgoff, flags: v.Flags, file: v.File, anon: v.Anon, copiedFrom: v,
	}
	apart := false
	if unfaulted && keepSource && s.rules.Quirks&ops.QuirkDontUnmapSelfMerge == 0 {
		if s.rules.Quirks&ops.QuirkDontUnmapApart != 0 {
			apart = addr == v.End || v.Start == addr+pages
		}
		if vmg.prev == v {
			vmg.prev = nil
		}
		if vmg.next == v {
			vmg.next = nil
		}
	}
	if !apart {
		if nv := s.vmaMergeNewRange(vmg); nv != nil {
			return nv
		}
	}
	nv := *v
	nv.Start, nv.End, nv.Pgoff = addr, addr+pages, pgoff
	s.layout.Insert(&nv)
	return &nv
}

// remapMove is the 6.17 move of every VMA in [addr, addr+len) to the fixed
// target, keeping the gaps between them.
func (s *Space) remapMove(vrm *remapState) ops.Errno {
	start, end := vrm.addr, vrm.addr+vrm.oldLen
	target := vrm.newAddr
	seen := false
	var lastEnd int64
	for v := s.layout.Find(start); v != nil && v.Start < end; v = s.firstFrom(lastEnd) {
		addr := max(v.Start, start)
		pages := min(end, v.End) - addr
		if !seen && start < v.Start {
			return ops.EFAULT
		}
		offset := int64(0)
		if seen {
			offset = v.Start - lastEnd
		}
		lastEnd = min(end, v.End)
		one := &remapState{vma: v, addr: addr, newAddr: target + offset, oldLen: pages, newLen: pages, fixed: true, dontUnmap: vrm.dontUnmap}
		if errno := s.checkPrepVMA(one); errno != ops.OK {
			return errno
		}
		if errno := s.mremapTo(one); errno != ops.OK {
			return errno
		}
		seen = true
		target = one.newAddr + pages
	}
	if !seen {
		return ops.EFAULT
	}
	return ops.OK
}

// firstFrom is the first VMA that starts at or after addr: the next one to
// move, past a source MREMAP_DONTUNMAP left in place (or merged with its
// copy).
func (s *Space) firstFrom(addr int64) *VMA {
	v := s.layout.Find(addr)
	if v != nil && v.Start < addr {
		v = s.layout.Find(v.End)
	}
	return v
}

// RemapMayMove implements ops.AddressSpace: mremap with MREMAP_MAYMOVE and
// no MREMAP_FIXED of a window range. It resizes in place when it can
// (shrinking always can); a growth that cannot moves the range to where
// get_unmapped_area puts it (unmappedAreaTopDown), as MREMAP_DONTUNMAP
// always does. A range that lands
// below the window is unmapped at once, as the kernel adapter does.
func (s *Space) RemapMayMove(a ops.VMAArgs) (int64, ops.Errno, error) {
	if err := ops.CheckVMAArgs(a); err != nil {
		return 0, 0, err
	}
	vrm := &remapState{addr: s.abs(ops.RegionWindow, a.Start), oldLen: a.Pages, newLen: a.NewPages, mayMove: true, dontUnmap: a.DontUnmap}
	if vrm.newLen == 0 || dontUnmapRefused(a) {
		return 0, ops.EINVAL, nil
	}
	vrm.vma = s.vmaLookup(vrm.addr)
	if errno := s.checkPrepVMA(vrm); errno != ops.OK {
		return 0, errno, nil
	}
	if vrm.dontUnmap {
		// mremap_to without MREMAP_FIXED: no target to unmap, the
		// kernel picks the address with the source still there.
		vrm.newAddr = s.unmappedAreaTopDown(vrm.newLen)
		s.moveVMA(vrm)
	} else if errno := s.mremapAt(vrm); errno != ops.OK {
		return 0, errno, nil
	}
	if vrm.populateExpand {
		start := vrm.newAddr + vrm.oldLen
		s.mmPopulate(start, start+vrm.delta, true)
	}
	if vrm.newAddr < windowBase {
		s.vmsGatherMunmapVMAs(vrm.newAddr, vrm.newAddr+vrm.newLen) // not sealed: it was just moved
	}
	return vrm.newAddr - windowBase, ops.OK, nil
}

// unmappedAreaTopDown is where get_unmapped_area puts pages new pages for
// the kernel adapter's helper: the top of the highest gap of the window
// that fits them (nothing above the window is free, and nothing needs a
// guard gap), else the top of the gap at the bottom of the window, which
// goes on below it.
func (s *Space) unmappedAreaTopDown(pages int64) int64 {
	gapEnd := windowBase + ops.VMAWindowPages
	all := s.layout.All()
	for i := len(all) - 1; i >= 0; i-- {
		v := all[i]
		if v.Start < windowBase || v.Start >= gapEnd {
			continue
		}
		if gapEnd-v.End >= pages {
			return gapEnd - pages
		}
		gapEnd = v.Start
	}
	return gapEnd - pages
}
