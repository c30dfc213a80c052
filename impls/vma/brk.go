package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Brk implements ops.AddressSpace: brk (mm/mmap.c). The break is kept as
// given, page-aligned or not; the heap's VMAs follow the break rounded up
// to a page (PAGE_ALIGN of the new and of the old break), so a move
// within one page only stores the new value. The syscall signals failure
// by returning the old break; here that is ENOMEM.
func (s *Space) Brk(a ops.VMAArgs) (ops.Errno, error) {
	if err := ops.CheckVMAArgs(a); err != nil {
		return 0, err
	}
	page, bytes := s.startBrk+a.Break, a.BreakBytes
	if page < s.startBrk { // brk < min_brk
		return ops.ENOMEM, nil
	}
	newbrk, oldbrk := pageAlign(page, bytes), pageAlign(s.brk, s.brkBytes)
	errno := ops.OK
	switch {
	case newbrk == oldbrk:
	case page < s.brk || page == s.brk && bytes <= s.brkBytes: // brk <= mm->brk: always allowed to shrink
		errno = s.brkShrink(newbrk, oldbrk)
	default:
		errno = s.brkGrow(newbrk, oldbrk)
	}
	if errno == ops.OK {
		s.brk, s.brkBytes = page, bytes
	}
	return errno, nil
}

// pageAlign is PAGE_ALIGN of the address page pages and bytes bytes in: the
// page it ends in.
func pageAlign(page, bytes int64) int64 {
	if bytes > 0 {
		return page + 1
	}
	return page
}

// brkShrink unmaps [newbrk, oldbrk); there must be a VMA in that range, and
// none of it sealed.
func (s *Space) brkShrink(newbrk, oldbrk int64) ops.Errno {
	if v := s.layout.Find(newbrk); v == nil || v.Start >= oldbrk {
		return ops.ENOMEM
	}
	if _, _, errno := s.vmsGatherMunmapVMAs(newbrk, oldbrk); errno != ops.OK {
		return ops.ENOMEM // a sealed VMA: the break stays where it was
	}
	return ops.OK
}

// brkGrow maps [oldbrk, newbrk) if at least a page stays free before the
// next VMA (the gap rule), extending the VMA that ends at the old break if
// it can.
func (s *Space) brkGrow(newbrk, oldbrk int64) ops.Errno {
	if next := s.layout.Find(oldbrk); next != nil && newbrk+1 > next.Start {
		return ops.ENOMEM
	}
	brkvma := s.layout.Before(oldbrk) // vma_prev_limit(start_brk)
	if brkvma != nil && brkvma.End <= s.startBrk {
		brkvma = nil
	}
	s.doBrkFlags(brkvma, oldbrk, newbrk)
	return ops.OK
}

// doBrkFlags extends brkvma over [addr, end) if it ends at addr and is
// compatible, else makes a new anonymous VMA there without trying any
// other merge. In just-expand mode the merge starts from brkvma and stays
// there; otherwise (6.12 before the hotfix) the iterator first steps to the
// gap and the merge walks back to prev: two walks more.
func (s *Space) doBrkFlags(brkvma *VMA, addr, end int64) {
	flags := vmDataDefault | VMAccount
	if brkvma != nil && brkvma.End == addr {
		vmg := &mergeState{prev: brkvma, start: addr, end: end, flags: flags, pgoff: addr, justExpand: s.rules.BrkJustExpand}
		if !vmg.justExpand {
			s.layout.Find(addr) // vma_iter_next_range
		}
		if s.vmaMergeNewRange(vmg) != nil {
			return
		}
	}
	if brkvma != nil {
		s.layout.Find(addr) // vma_iter_next_range
	}
	s.layout.Insert(&VMA{Start: addr, End: end, Flags: flags, Pgoff: addr})
}
