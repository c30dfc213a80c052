package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Advise implements ops.AddressSpace: madvise (madvise_walk_vmas). Holes
// do not stop the walk: it goes on and returns ENOMEM at the end; an error
// of one VMA stops it at once.
func (s *Space) Advise(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	if !s.madviseBehaviorValid(a.Advice) {
		return ops.EINVAL, nil
	}
	if a.Pages == 0 {
		return ops.OK, nil
	}
	start := s.abs(a.Region(), a.Start)
	end := start + a.Pages
	if isPopulate(a.Advice) && s.rules.Quirks&ops.QuirkPopulateInWalk == 0 {
		return s.madvisePopulate(start, end, a.Advice == ops.AdvicePopulateWrite), nil
	}
	v := s.layout.Find(start)
	var prev *VMA
	if v != nil {
		prev = s.layout.Before(v.Start)
	}
	if v != nil && start > v.Start {
		prev = v
	}
	unmapped := ops.OK
	for rstart := start; ; {
		if v == nil {
			return ops.ENOMEM, nil
		}
		if rstart < v.Start {
			unmapped, rstart = ops.ENOMEM, v.Start
			if rstart >= end {
				break
			}
		}
		rend := min(v.End, end)
		res, errno := s.madviseVMABehavior(v, prev, rstart, rend, a.Advice)
		if errno != ops.OK {
			return errno, nil
		}
		v, prev = res, res
		rend = max(rend, v.End)
		if rend >= end {
			break
		}
		v, rstart = s.layout.Find(v.End), rend
	}
	return unmapped, nil
}

// madviseBehaviorValid: the advice exists on this kernel.
func (s *Space) madviseBehaviorValid(adv ops.VMAAdvice) bool {
	q := s.rules.Quirks
	switch adv {
	case ops.AdviceMergeable, ops.AdviceUnmergeable:
		return q&ops.QuirkKSM != 0
	case ops.AdviceHugePage, ops.AdviceNoHugePage:
		return q&ops.QuirkTHP != 0
	case ops.AdviceGuardInstall, ops.AdviceGuardRemove:
		return q&ops.QuirkGuardRegions != 0
	}
	return adv >= ops.AdviceNormal && adv <= ops.AdvicePopulateWrite
}

// madviseVMABehavior applies the advice to [start, end) of v and returns
// the VMA the walk goes on from.
func (s *Space) madviseVMABehavior(v, prev *VMA, start, end int64, adv ops.VMAAdvice) (*VMA, ops.Errno) {
	if !canMadviseModify(v, adv) {
		return v, ops.EPERM
	}
	switch adv {
	case ops.AdviceDontNeed:
		if v.Flags&(VMLocked|VMPfnMap|VMHugeTLB) != 0 {
			return v, ops.EINVAL
		}
		return v, ops.OK // pages go, guard markers and the layout stay
	case ops.AdviceDontNeedLocked:
		if v.Flags&VMPfnMap != 0 {
			return v, ops.EINVAL
		}
		return v, ops.OK
	case ops.AdviceWillNeed:
		// Read-ahead: nothing a VMA shows. Without swap (ops.QuirkNoSwap)
		// a private anonymous VMA has nothing to read back: EBADF.
		if s.rules.Quirks&ops.QuirkNoSwap != 0 && v.File == nil && v.Flags&VMShared == 0 {
			return v, ops.EBADF
		}
		return v, ops.OK
	case ops.AdviceCold, ops.AdvicePageOut:
		if v.Flags&(VMLocked|VMPfnMap|VMHugeTLB) != 0 { // can_madv_lru_vma
			return v, ops.EINVAL
		}
		return v, ops.OK
	case ops.AdviceFree:
		// madvise_dontneed_free_valid_vma, then madvise_free_single_vma:
		// only a private anonymous VMA (no vm_ops: not shmem, not a file).
		if v.Flags&(VMLocked|VMPfnMap|VMHugeTLB) != 0 || v.File != nil || v.Flags&VMShared != 0 {
			return v, ops.EINVAL
		}
		return v, ops.OK
	case ops.AdvicePopulateRead, ops.AdvicePopulateWrite:
		// 6.1: one VMA's part of the walk (ops.QuirkPopulateInWalk).
		return v, s.madvisePopulate(start, end, adv == ops.AdvicePopulateWrite)
	case ops.AdviceRemove:
		// madvise_remove: a hole punched in the file behind a shared
		// mapping that may write it (shmem for a shared anonymous one).
		switch {
		case v.Flags&VMLocked != 0, v.File == nil:
			return v, ops.EINVAL
		case v.Flags&VMShared == 0 || v.Flags&VMMayWrite == 0:
			return v, ops.EACCES
		}
		return v, ops.OK
	case ops.AdviceGuardInstall:
		return v, s.madviseGuardInstall(v, start, end)
	case ops.AdviceGuardRemove:
		if v.Flags&(vmSpecial|VMHugeTLB) != 0 {
			return v, ops.EINVAL
		}
		for p := start; p < end; p++ {
			delete(s.guards, p)
		}
		return v, ops.OK
	}
	newFlags, errno := s.madviseNewFlags(v, adv)
	if errno != ops.OK {
		return v, errno
	}
	return s.madviseUpdateVMA(v, prev, start, end, newFlags), ops.OK
}

func isPopulate(adv ops.VMAAdvice) bool {
	return adv == ops.AdvicePopulateRead || adv == ops.AdvicePopulateWrite
}

// madvisePopulate is madvise_populate: [start, end) faulted in page by page
// as get_user_pages does for it (FOLL_MADV_POPULATE): a hole is ENOMEM, a
// VMA the access is not allowed on EINVAL (check_vma_flags: no VM_WRITE
// for a write, no VM_READ for a read, the execute-only key), a fault the
// process would get SIGSEGV or SIGBUS for EFAULT (a guard marker, a page
// past the end of its file). The pages before the failure stay faulted.
func (s *Space) madvisePopulate(start, end int64, write bool) ops.Errno {
	for p := start; p < end; p++ {
		v := s.vmaLookup(p)
		if v == nil {
			return ops.ENOMEM
		}
		if write && v.Flags&VMWrite == 0 || !write && v.Flags&VMRead == 0 || v.Flags&VMPkeyExecOnly != 0 {
			return ops.EINVAL
		}
		if s.guards[p] {
			return ops.EFAULT
		}
		if write && isCOWWrite(v) || !write && s.readAllocates(v) {
			s.anonVMAPrepare(v)
		}
		if pastEOF(v, p) {
			return ops.EFAULT
		}
	}
	return ops.OK
}

// madviseGuardInstall marks the whole VMA as maybe guarded (no split),
// gives an anonymous one an anon_vma, and puts markers on [start, end).
func (s *Space) madviseGuardInstall(v *VMA, start, end int64) ops.Errno {
	if v.Flags&(vmSpecial|VMHugeTLB|VMLocked) != 0 {
		return ops.EINVAL
	}
	if s.rules.Quirks&ops.QuirkStickyGuard != 0 {
		v.Flags |= VMMaybeGuard
	}
	if v.File == nil {
		s.anonVMAPrepare(v)
	}
	for p := start; p < end; p++ {
		s.guards[p] = true
	}
	return ops.OK
}

// madviseNewFlags computes the flags a flag-changing advice gives v.
func (s *Space) madviseNewFlags(v *VMA, adv ops.VMAAdvice) (Flags, ops.Errno) {
	f := v.Flags
	switch adv {
	case ops.AdviceNormal:
		f &^= VMRandRead | VMSeqRead
	case ops.AdviceSequential:
		f = f&^VMRandRead | VMSeqRead
	case ops.AdviceRandom:
		f = f&^VMSeqRead | VMRandRead
	case ops.AdviceDontFork:
		f |= VMDontCopy
	case ops.AdviceDoFork:
		if f&vmSpecial != 0 {
			return 0, ops.EINVAL
		}
		f &^= VMDontCopy
	case ops.AdviceWipeOnFork:
		if v.File != nil || f&VMShared != 0 {
			return 0, ops.EINVAL
		}
		f |= VMWipeOnFork
	case ops.AdviceKeepOnFork:
		if f&VMDroppable != 0 {
			return 0, ops.EINVAL
		}
		f &^= VMWipeOnFork
	case ops.AdviceDontDump:
		f |= VMDontDump
	case ops.AdviceDoDump:
		if f&(vmSpecial|VMDroppable) != 0 {
			return 0, ops.EINVAL
		}
		f &^= VMDontDump
	case ops.AdviceMergeable:
		if ksmCompatible(v) {
			f |= VMMergeable
		}
	case ops.AdviceUnmergeable:
		f &^= VMMergeable
	case ops.AdviceHugePage:
		f = f&^VMNoHugePage | VMHugePage
	case ops.AdviceNoHugePage:
		f = f&^VMHugePage | VMNoHugePage
	}
	return f, ops.OK
}

// ksmCompatible is vma_ksm_compatible: KSM only takes private mappings of
// ordinary memory.
func ksmCompatible(v *VMA) bool {
	return v.Flags&(VMShared|VMMayShare|VMPfnMap|VMIO|VMDontExpand|VMHugeTLB|VMMixedMap|VMDroppable) == 0
}

// madviseUpdateVMA gives [start, end) of v the new flags, merging or
// splitting; nothing happens if they do not change.
func (s *Space) madviseUpdateVMA(v, prev *VMA, start, end int64, newFlags Flags) *VMA {
	if newFlags == v.Flags {
		return v
	}
	res := s.vmaModifyFlags(prev, v, start, end, &newFlags)
	res.Flags = newFlags
	return res
}

// isDiscard: the advices that can throw a page's contents away, or keep
// them from a child (is_discard).
func isDiscard(adv ops.VMAAdvice) bool {
	switch adv {
	case ops.AdviceFree, ops.AdviceDontNeed, ops.AdviceDontNeedLocked, ops.AdviceDontFork,
		ops.AdviceWipeOnFork, ops.AdviceGuardInstall, ops.AdviceRemove:
		return true
	}
	return false
}

// canMadviseModify is can_madvise_modify: a sealed VMA refuses a
// discarding advice if it is anonymous (private: no vm_ops) and not
// writable.
func canMadviseModify(v *VMA, adv ops.VMAAdvice) bool {
	if v.Flags&VMSealed == 0 || !isDiscard(adv) || v.File != nil {
		return true
	}
	return v.Flags&VMWrite != 0
}
