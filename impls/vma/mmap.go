package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Map implements ops.AddressSpace: mmap(MAP_FIXED) of a.Pages pages.
func (s *Space) Map(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	var f *File
	if a.File != 0 {
		if f = s.files[a.File]; f == nil {
			return ebadf, nil
		}
	}
	if a.Pages == 0 {
		return ops.EINVAL, nil
	}
	addr := s.abs(a.Region(), a.Start)
	flags, pgoff, errno := s.doMmapFlags(a, f, addr)
	if errno != ops.OK {
		return errno, nil
	}
	flags, errno = s.mmapRegion(f, addr, addr+a.Pages, flags, pgoff)
	if errno != ops.OK {
		return errno, nil
	}
	if flags&VMLocked != 0 || a.Flags&ops.MapPopulate != 0 {
		s.mmPopulate(addr, addr+a.Pages, true)
	}
	return ops.OK, nil
}

// doMmapFlags computes the flags and pgoff do_mmap gives the mapping.
func (s *Space) doMmapFlags(a ops.VMAArgs, f *File, addr int64) (Flags, int64, ops.Errno) {
	flags := protFlags(a.Prot) | VMMayRead | VMMayWrite | VMMayExec
	if a.Prot == ops.ProtExec && s.rules.Quirks&ops.QuirkExecOnlyPkey != 0 {
		flags |= VMPkeyExecOnly
	}
	if a.Flags&ops.MapLocked != 0 {
		flags |= VMLocked
	}
	if a.Flags&ops.MapStack != 0 && s.rules.Quirks&ops.QuirkStackNoHuge != 0 {
		flags |= VMNoHugePage
	}
	// do_mmap: after the address, before the file's checks.
	if a.Flags&ops.MapLocked != 0 && !s.canDoMlock() {
		return 0, 0, ops.EPERM
	}
	if !s.mlockFutureOK(flags, a.Pages) {
		return 0, 0, ops.EAGAIN
	}
	shared := a.Flags&ops.MapShared != 0
	var pgoff int64
	switch {
	case f != nil && shared:
		if a.Prot&ops.ProtWrite != 0 && !f.Writable {
			return 0, 0, ops.EACCES
		}
		flags |= VMShared | VMMayShare
		if !f.Writable {
			flags &^= VMMayWrite | VMShared
		}
		pgoff = a.Offset
	case f != nil:
		pgoff = a.Offset
	case shared:
		flags |= VMShared | VMMayShare
	default:
		pgoff = addr
	}
	if a.Flags&ops.MapNoReserve != 0 {
		flags |= VMNoReserve
	}
	return flags, pgoff, ops.OK
}

// accountableMapping: a private writable mapping not NORESERVE is charged
// (VM_ACCOUNT).
func accountableMapping(flags Flags) bool {
	return flags&(VMNoReserve|VMShared|VMWrite) == VMWrite
}

// mmapRegion is __mmap_region: unmap what the range overlaps, then merge
// with the VMAs around it or make a new VMA. It returns the new mapping's
// flags, or EPERM if a sealed VMA is in the way (__mmap_prepare's gather).
func (s *Space) mmapRegion(f *File, addr, end int64, flags Flags, pgoff int64) (Flags, ops.Errno) {
	prev, next, errno := s.vmsGatherMunmapVMAs(addr, end)
	if errno != ops.OK {
		return 0, errno
	}
	if accountableMapping(flags) {
		flags |= VMAccount
	}
	var v *VMA
	if prev != nil || next != nil {
		vmg := &mergeState{prev: prev, next: next, start: addr, end: end, flags: flags, file: f, pgoff: pgoff}
		if s.rules.Quirks&ops.QuirkMmapNextFirst != 0 {
			v = s.mmapMergeNextFirst(vmg)
		} else {
			v = s.vmaMergeNewRange(vmg)
		}
	}
	if v == nil {
		v = &VMA{Start: addr, End: end, Flags: flags, File: f, Pgoff: pgoff}
		if f == nil && flags&VMShared != 0 {
			v.File = s.shmemZeroSetup(end - addr)
		}
		s.layout.Insert(v)
	}
	return v.Flags, ops.OK
}

// shmemZeroSetup makes the shmem file behind a shared anonymous mapping.
func (s *Space) shmemZeroSetup(pages int64) *File {
	s.nextShm++
	return s.newFile(&Inode{Ordinal: s.nextShm, Shm: true, Pages: pages}, true)
}

// vmsGatherMunmapVMAs unmaps [start, end): splits the VMAs at both ends and
// removes what lies inside. It returns the VMAs just outside the range.
//
// A sealed VMA in the range makes it EPERM (vms_gather_munmap_vmas): the
// first VMA is checked before it is split at start, each VMA of the range
// before the range's end splits it, and nothing is removed; a split of the
// first VMA made before a later one refused stays.
func (s *Space) vmsGatherMunmapVMAs(start, end int64) (prev, next *VMA, errno ops.Errno) {
	if start >= end {
		return nil, nil, ops.OK // do_vmi_munmap refuses an empty range (EINVAL)
	}
	v := s.layout.Find(start)
	if v == nil || v.Start >= end {
		return s.layout.Before(start), v, ops.OK
	}
	if start > v.Start {
		if v.Flags&VMSealed != 0 {
			return nil, nil, ops.EPERM
		}
		s.splitVMA(v, start, true)
	}
	for w := s.layout.Find(start); w != nil && w.Start < end; w = s.layout.Find(w.End) {
		if w.Flags&VMSealed != 0 {
			return nil, nil, ops.EPERM
		}
	}
	prev = s.layout.Before(start)
	for v = s.layout.Find(start); v != nil && v.Start < end; v = s.layout.Find(start) {
		if v.End > end {
			s.splitVMA(v, end, false)
		}
		s.layout.Remove(v)
	}
	for p := start; p < end; p++ {
		delete(s.guards, p)
	}
	return prev, s.layout.Find(end), ops.OK
}

// Unmap implements ops.AddressSpace: munmap.
func (s *Space) Unmap(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	if a.Pages == 0 {
		return ops.EINVAL, nil
	}
	start := s.abs(a.Region(), a.Start)
	_, _, errno := s.vmsGatherMunmapVMAs(start, start+a.Pages)
	return errno, nil
}
