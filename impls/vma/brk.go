package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Brk implements ops.AddressSpace: brk. The syscall signals failure by
// returning the old break; here that is ENOMEM.
func (s *Space) Brk(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	newbrk, oldbrk := s.startBrk+a.Break, s.brk
	switch {
	case newbrk < s.startBrk:
		return ops.ENOMEM, nil
	case newbrk == oldbrk:
		return ops.OK, nil
	case newbrk < oldbrk:
		return s.brkShrink(newbrk, oldbrk), nil
	}
	return s.brkGrow(newbrk, oldbrk), nil
}

// brkShrink unmaps [newbrk, oldbrk); there must be a VMA in that range.
func (s *Space) brkShrink(newbrk, oldbrk int64) ops.Errno {
	if v := s.layout.Find(newbrk); v == nil || v.Start >= oldbrk {
		return ops.ENOMEM
	}
	s.brk = newbrk
	s.vmsGatherMunmapVMAs(newbrk, oldbrk)
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
	s.brk = newbrk
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
