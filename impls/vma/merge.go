package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// mergeState is struct vma_merge_struct: a proposed range with its
// attributes and the VMAs around it.
type mergeState struct {
	prev, middle, next *VMA
	// target is the VMA a merge expands.
	target     *VMA
	start, end int64
	pgoff      int64
	flags      Flags
	file       *File
	anon       *AnonVMA
	// copiedFrom is the VMA mremap copies (vma_merge_copied_range).
	copiedFrom *VMA
	// justExpand: only expand prev, no right merge, no walk back (brk).
	justExpand bool
}

// ignoreMerge is VM_IGNORE_MERGE: the flags merging does not compare.
func (s *Space) ignoreMerge() Flags {
	if s.rules.Quirks&ops.QuirkStickyGuard != 0 {
		return VMMaybeGuard
	}
	return 0
}

// sticky is VM_STICKY: the flags a merge result keeps from every part.
func (s *Space) sticky() Flags { return s.ignoreMerge() }

// isMergeableVMA compares the proposed attributes with prev's or next's:
// flags (but the ignored ones), file description (and policy, userfaultfd
// context and anon name, which the model never varies).
func (s *Space) isMergeableVMA(vmg *mergeState, mergeNext bool) bool {
	v := vmg.prev
	if mergeNext {
		v = vmg.next
	}
	return (v.Flags^vmg.flags)&^s.ignoreMerge() == 0 && v.File == vmg.file
}

// vmaIsForkChild: the VMA was faulted before a fork (its anon_vma_chain is
// not a single entry).
func vmaIsForkChild(v *VMA) bool { return v != nil && v.Anon != nil && v.ForkChild }

// isMergeableAnonVMA decides whether the anon_vma of the target (prev or
// next) and the one the range carries can become one.
func (s *Space) isMergeableAnonVMA(vmg *mergeState, mergeNext bool) bool {
	tgt := vmg.prev
	if mergeNext {
		tgt = vmg.next
	}
	src, srcAnon := vmg.middle, vmg.anon
	if s.rules.Quirks&ops.QuirkAnonMergeFix == 0 {
		// Before 879bca0a2c4f: with either side unfaulted, only a target
		// with a singular chain (faulted, not a fork child) would do.
		if (srcAnon == nil || tgt.Anon == nil) && tgt.Anon != nil && !tgt.ForkChild {
			return true
		}
		return srcAnon == tgt.Anon
	}
	switch {
	case tgt.Anon == nil && srcAnon != nil:
		// The target will adopt src's anon_vma (dup_anon_vma).
		if vmaIsForkChild(src) {
			return false
		}
		return s.rules.Quirks&ops.QuirkForkChildRemap == 0 || !vmaIsForkChild(vmg.copiedFrom)
	case tgt.Anon != nil && srcAnon == nil:
		return !vmaIsForkChild(tgt)
	}
	return srcAnon == tgt.Anon
}

// canVMAMergeBefore: the range can go in front of next.
func (s *Space) canVMAMergeBefore(vmg *mergeState) bool {
	return s.isMergeableVMA(vmg, true) && s.isMergeableAnonVMA(vmg, true) &&
		vmg.next.Pgoff == vmg.pgoff+(vmg.end-vmg.start)
}

// canVMAMergeAfter: the range can go after prev.
func (s *Space) canVMAMergeAfter(vmg *mergeState) bool {
	return s.isMergeableVMA(vmg, false) && s.isMergeableAnonVMA(vmg, false) &&
		vmg.prev.Pgoff+vmg.prev.Pages() == vmg.pgoff
}

// canVMAMergeLeft: prev is adjacent and compatible.
func (s *Space) canVMAMergeLeft(vmg *mergeState) bool {
	return vmg.prev != nil && vmg.prev.End == vmg.start && s.canVMAMergeAfter(vmg)
}

// canVMAMergeRight: next is adjacent and compatible, and if prev merges too,
// prev's and next's anon_vmas are compatible with each other.
func (s *Space) canVMAMergeRight(vmg *mergeState, canMergeLeft bool) bool {
	next := vmg.next
	if next == nil || vmg.end != next.Start || !s.canVMAMergeBefore(vmg) {
		return false
	}
	if !canMergeLeft {
		return true
	}
	prev := vmg.prev
	return prev.Anon == nil || next.Anon == nil || prev.Anon == next.Anon
}

// canMergeRemoveVMA: a merge may delete v (it has no close hook).
func canMergeRemoveVMA(v *VMA) bool { return !v.CloseHook }

// dupAnonVMA gives dst src's anon_vma when dst has none (and with it src's
// chain, so its fork-child state).
func dupAnonVMA(dst, src *VMA) {
	if src.Anon != nil && dst.Anon == nil {
		dst.Anon, dst.ForkChild = src.Anon, src.ForkChild
	}
}

// vmaMergeNewRange is algorithm A: merge a range about to be mapped with
// prev, next or both; nil if no merge was possible (the caller then makes a
// new VMA).
func (s *Space) vmaMergeNewRange(vmg *mergeState) *VMA {
	prev, next, end := vmg.prev, vmg.next, vmg.end
	if vmg.flags&vmSpecial != 0 || (prev == nil && next == nil) {
		return nil
	}
	canMergeLeft := s.canVMAMergeLeft(vmg)
	canMergeRight := !vmg.justExpand && s.canVMAMergeRight(vmg, canMergeLeft)
	if canMergeRight {
		vmg.end, vmg.target = next.End, next
	}
	if canMergeLeft {
		vmg.start, vmg.target, vmg.pgoff = prev.Start, prev, prev.Pgoff
		if canMergeRight && !canMergeRemoveVMA(next) {
			vmg.end = end
		}
		if !vmg.justExpand {
			s.layout.Before(vmg.start) // vma_prev: walk back to prev
		}
	}
	if vmg.target == nil {
		return nil
	}
	s.vmaExpand(vmg)
	return vmg.target
}

// mmapMergeNextFirst is the merge of a new mapping in 6.1's
// __mmap_region (ops.QuirkMmapNextFirst): next is tried first (with no
// anon_vma, as the new range has none), then prev with the anon_vma of
// the VMA already chosen (next's, if next fits), and the last one that
// fits is expanded over the range (vma_expand, which deletes next when
// prev takes it too). Checking prev against next's anon_vma is the only
// check of the two against each other; nil if neither fits.
func (s *Space) mmapMergeNextFirst(vmg *mergeState) *VMA {
	prev, next := vmg.prev, vmg.next
	if vmg.flags&vmSpecial != 0 {
		return nil
	}
	start, end, pgoff := vmg.start, vmg.end, vmg.pgoff
	if next != nil && next.Start == vmg.end && s.canVMAMergeBefore(vmg) {
		vmg.target, end, pgoff = next, next.End, next.Pgoff-(vmg.end-vmg.start)
		vmg.anon = next.Anon
	}
	if prev != nil && prev.End == vmg.start && s.canVMAMergeAfter(vmg) {
		vmg.target, start, pgoff = prev, prev.Start, prev.Pgoff
	}
	if vmg.target == nil {
		return nil
	}
	vmg.start, vmg.end, vmg.pgoff = start, end, pgoff
	s.vmaExpand(vmg)
	return vmg.target
}

// vmaExpand stretches the target over [start, end), deleting next if the
// range ends where next does.
func (s *Space) vmaExpand(vmg *mergeState) {
	target, next := vmg.target, vmg.next
	removeNext := next != nil && target != next && vmg.end == next.End
	sticky := vmg.flags&s.sticky() | target.Flags&s.sticky()
	if removeNext {
		sticky |= next.Flags & s.sticky()
		dupAnonVMA(target, next)
	}
	if vmg.copiedFrom != nil {
		dupAnonVMA(target, vmg.copiedFrom)
	}
	if removeNext {
		s.layout.Remove(next)
	}
	target.Start, target.End, target.Pgoff = vmg.start, vmg.end, vmg.pgoff
	s.layout.Store(target)
	target.Flags |= sticky
}

// vmaMergeExistingRange is algorithm B: [start, end) of middle gets new
// attributes; merge it into prev, next or both if they match. Returns the
// merged VMA, or nil if the caller must split instead.
func (s *Space) vmaMergeExistingRange(vmg *mergeState) *VMA {
	middle, prev := vmg.middle, vmg.prev
	start, end := vmg.start, vmg.end
	leftSide, rightSide := start == middle.Start, end == middle.End
	if vmg.flags&vmSpecial != 0 || (!leftSide && !rightSide) {
		return nil
	}
	mergeLeft := leftSide && s.canVMAMergeLeft(vmg)
	mergeRight := false
	var next *VMA
	if rightSide {
		next = s.layout.Find(middle.End) // vma_iter_next_range
		vmg.next = next
		mergeRight = s.canVMAMergeRight(vmg, mergeLeft)
	}
	if mergeLeft {
		s.layout.Before(middle.Start) // vma_prev
	} else if !mergeRight {
		return nil
	}
	removeMiddle := leftSide && rightSide
	if removeMiddle && !canMergeRemoveVMA(middle) {
		return nil
	}
	mergeBoth := mergeLeft && mergeRight
	if mergeBoth && !canMergeRemoveVMA(next) {
		mergeRight, mergeBoth = false, false
	}
	sticky := vmg.flags & s.sticky()
	if mergeRight {
		vmg.target = next
		sticky |= next.Flags & s.sticky()
	}
	if mergeLeft {
		vmg.target = prev
		sticky |= prev.Flags & s.sticky()
	}
	switch {
	case mergeBoth:
		s.commitMergeBoth(prev, middle, next)
	case mergeLeft:
		s.commitMergeLeft(prev, middle, end, removeMiddle)
	default:
		s.commitMergeRight(middle, next, start, removeMiddle)
	}
	vmg.target.Flags |= sticky
	return vmg.target
}

// commitMergeBoth: prev extends over middle and next, which go.
func (s *Space) commitMergeBoth(prev, middle, next *VMA) {
	if next.Anon != nil {
		dupAnonVMA(prev, next)
	} else {
		dupAnonVMA(prev, middle)
	}
	s.layout.Remove(middle)
	s.layout.Remove(next)
	prev.End = next.End
	s.layout.Store(prev)
}

// commitMergeLeft: prev extends to end; middle goes or starts at end.
func (s *Space) commitMergeLeft(prev, middle *VMA, end int64, removeMiddle bool) {
	dupAnonVMA(prev, middle)
	if removeMiddle {
		s.layout.Remove(middle)
	} else {
		middle.Pgoff += end - middle.Start
		middle.Start = end
		s.layout.Store(middle)
	}
	prev.End = end
	s.layout.Store(prev)
}

// commitMergeRight: next extends down to start; middle goes or ends at
// start.
func (s *Space) commitMergeRight(middle, next *VMA, start int64, removeMiddle bool) {
	dupAnonVMA(next, middle)
	if removeMiddle {
		s.layout.Remove(middle)
	} else {
		middle.End = start
		s.layout.Store(middle)
	}
	next.Pgoff -= next.Start - start
	next.Start = start
	s.layout.Store(next)
}

// splitVMA is __split_vma: cut v at addr. With newBelow the new VMA is the
// part below addr and v keeps the part above; otherwise v keeps the part
// below. Both parts share the anon_vma, file and flags.
func (s *Space) splitVMA(v *VMA, addr int64, newBelow bool) *VMA {
	nv := *v
	if newBelow {
		nv.End = addr
		v.Pgoff += addr - v.Start
		v.Start = addr
	} else {
		nv.Start = addr
		nv.Pgoff += addr - v.Start
		v.End = addr
	}
	s.layout.Store(v)
	s.layout.Insert(&nv)
	return &nv
}

// vmaModify is vma_modify: try algorithm B; if no merge, split middle so
// that [start, end) is a VMA of its own. It returns that VMA and whether it
// came from a merge.
func (s *Space) vmaModify(vmg *mergeState) (*VMA, bool) {
	if merged := s.vmaMergeExistingRange(vmg); merged != nil {
		return merged, true
	}
	v := vmg.middle
	if v.Start < vmg.start {
		s.splitVMA(v, vmg.start, true)
	}
	if v.End > vmg.end {
		s.splitVMA(v, vmg.end, false)
	}
	return v, false
}

// vmaModifyFlags is vma_modify_flags: [start, end) of v gets *flags. On a
// merge, *flags becomes the result's flags (sticky ones may have been
// kept); the caller then sets the flags of the VMA returned.
func (s *Space) vmaModifyFlags(prev, v *VMA, start, end int64, flags *Flags) *VMA {
	vmg := &mergeState{
		prev: prev, middle: v, start: start, end: end,
		pgoff: v.Pgoff + (start - v.Start), flags: *flags, file: v.File, anon: v.Anon,
	}
	res, merged := s.vmaModify(vmg)
	if merged {
		*flags = res.Flags
	}
	return res
}
