package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Lock implements ops.AddressSpace: mlock, or mlock2(MLOCK_ONFAULT); then the
// range is populated (not for on-fault), a failure of which is ENOMEM.
func (s *Space) Lock(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	flags := VMLocked
	if a.OnFault {
		flags |= VMLockOnFault
	}
	start := s.abs(a.Region(), a.Start)
	if errno := s.mlockLimit(start, start+a.Pages); errno != ops.OK {
		return errno, nil
	}
	if errno := s.applyVMALockFlags(start, start+a.Pages, flags); errno != ops.OK {
		return errno, nil
	}
	if s.mmPopulate(start, start+a.Pages, false) != ops.OK {
		return ops.ENOMEM, nil // EFAULT from get_user_pages is ENOMEM for mlock
	}
	return ops.OK, nil
}

// Unlock implements ops.AddressSpace: munlock.
func (s *Space) Unlock(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	start := s.abs(a.Region(), a.Start)
	return s.applyVMALockFlags(start, start+a.Pages, 0), nil
}

// applyVMALockFlags walks the VMAs of [start, end) as mprotect does (a hole
// is ENOMEM at once) and gives each the lock flags.
func (s *Space) applyVMALockFlags(start, end int64, flags Flags) ops.Errno {
	if end == start {
		return ops.OK
	}
	v := s.vmaLookup(start)
	if v == nil {
		return ops.ENOMEM
	}
	return s.fixupRange(v, start, end, func(v *VMA, pprev **VMA, from, to int64) (*VMA, ops.Errno) {
		return s.mlockFixup(v, pprev, from, to, v.Flags&^vmLockedMask|flags), ops.OK
	})
}

// vmaSupportsMlock: no special, droppable or hugetlb VMA is ever locked.
func vmaSupportsMlock(v *VMA) bool {
	return v.Flags&(vmSpecial|VMDroppable|VMHugeTLB) == 0
}

// mlockFixup gives [start, end) of v the lock flags, merging or splitting.
func (s *Space) mlockFixup(v *VMA, pprev **VMA, start, end int64, newflags Flags) *VMA {
	if newflags == v.Flags || !vmaSupportsMlock(v) {
		*pprev = v
		return v
	}
	res := s.vmaModifyFlags(*pprev, v, start, end, &newflags)
	*pprev = res
	res.Flags = newflags
	return res
}
