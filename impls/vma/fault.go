package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// anonVMAPrepare gives v an anon_vma if it has none: a neighbour's, when
// find_mergeable_anon_vma finds one, else a new one.
func (s *Space) anonVMAPrepare(v *VMA) {
	if v.Anon != nil {
		return
	}
	anon := s.findMergeableAnonVMA(v)
	if anon == nil {
		s.nextAnon++
		anon = &AnonVMA{ID: s.nextAnon}
	}
	v.Anon, v.ForkChild = anon, false
}

// anonVMACompatible: a and b (in address order) could share an anon_vma:
// adjacent, same file, flags equal but for access and ignored bits, pgoffs
// contiguous.
func (s *Space) anonVMACompatible(a, b *VMA) bool {
	return a.End == b.Start && a.File == b.File &&
		(a.Flags^b.Flags)&^(vmAccessFlags|s.ignoreMerge()) == 0 &&
		b.Pgoff == a.Pgoff+(b.Start-a.Start)
}

// reusableAnonVMA returns old's anon_vma if a and b are compatible and old's
// is not shared with a fork parent.
func (s *Space) reusableAnonVMA(old, a, b *VMA) *AnonVMA {
	if s.anonVMACompatible(a, b) && old.Anon != nil && !old.ForkChild {
		return old.Anon
	}
	return nil
}

// findMergeableAnonVMA looks for a neighbour's anon_vma to reuse: next
// first, then prev.
func (s *Space) findMergeableAnonVMA(v *VMA) *AnonVMA {
	if next := s.layout.Find(v.End); next != nil && next.Start == v.End {
		if anon := s.reusableAnonVMA(next, v, next); anon != nil {
			return anon
		}
	}
	if prev := s.layout.Before(v.Start); prev != nil {
		return s.reusableAnonVMA(prev, prev, v)
	}
	return nil
}

// vmaLookup returns the VMA containing page p, or nil.
func (s *Space) vmaLookup(p int64) *VMA {
	if v := s.layout.Find(p); v != nil && v.Start <= p {
		return v
	}
	return nil
}

// pastEOF: page p of v lies at or beyond the end of its file.
func pastEOF(v *VMA, p int64) bool {
	return v.File != nil && v.Pgoff+(p-v.Start) >= v.File.Inode.Pages
}

// isCOWWrite: a write fault on v breaks copy-on-write into anonymous memory
// (so it needs an anon_vma): v is not VM_SHARED.
func isCOWWrite(v *VMA) bool { return v.Flags&VMShared == 0 }

// handleFault is one access to page p by the process (or by the kernel on
// its behalf through uaccess): false if the process would get SIGSEGV or
// SIGBUS (the adapter's uaccess then reports EFAULT).
func (s *Space) handleFault(p int64, write bool) bool {
	v := s.vmaLookup(p)
	if v == nil || s.guards[p] {
		return false
	}
	if write && v.Flags&VMWrite == 0 || !write && !v.Flags.vmaIsAccessible() {
		return false
	}
	if v.Flags&VMPkeyExecOnly != 0 {
		return false // PKRU forbids the execute-only key to data accesses
	}
	if write && isCOWWrite(v) || !write && s.readAllocates(v) {
		s.anonVMAPrepare(v)
	}
	return !pastEOF(v, p)
}

// readAllocates: a read fault on v allocates an anonymous page (and so
// needs an anon_vma): v is private anonymous memory on a kernel that maps
// no zero page there (ops.QuirkNoZeroPage).
func (s *Space) readAllocates(v *VMA) bool {
	return s.rules.Quirks&ops.QuirkNoZeroPage != 0 && v.File == nil && v.Flags&VMShared == 0
}

// Touch is one access to a page.
func (s *Space) Touch(a ops.VMAArgs) (ops.Errno, error) {
	if err := ops.CheckVMARangeIn(a.Region(), a.Start, 1, s.windowPages()); err != nil {
		return 0, err
	}
	if !s.handleFault(s.abs(a.Region(), a.Start), a.Write) {
		return ops.EFAULT, nil
	}
	return ops.OK, nil
}

// populateVMAPageRange is populate_vma_page_range: fault in [start, end) of
// v as get_user_pages does (write faults for a private writable VMA, forced
// read faults otherwise); false at the first page that cannot be.
func (s *Space) populateVMAPageRange(v *VMA, start, end int64) bool {
	if v.Flags&VMLockOnFault != 0 {
		return true
	}
	if !v.Flags.vmaIsAccessible() || v.Flags&VMPkeyExecOnly != 0 {
		return false
	}
	write := v.Flags&(VMWrite|VMShared) == VMWrite
	for p := start; p < end; p++ {
		if s.guards[p] {
			return false
		}
		if write || s.readAllocates(v) {
			s.anonVMAPrepare(v)
		}
		if pastEOF(v, p) {
			return false
		}
	}
	return true
}

// mmPopulate is __mm_populate over [start, end): populate each VMA in turn.
// With ignoreErrors a failing VMA is skipped; without, the first failure
// ends it (EFAULT).
func (s *Space) mmPopulate(start, end int64, ignoreErrors bool) ops.Errno {
	for nstart := start; nstart < end; {
		v := s.layout.Find(nstart)
		if v == nil || v.Start >= end {
			break
		}
		nend := min(end, v.End)
		if v.Flags&(VMIO|VMPfnMap) == 0 {
			nstart = max(nstart, v.Start)
			if !s.populateVMAPageRange(v, nstart, nend) && !ignoreErrors {
				return ops.EFAULT
			}
		}
		nstart = nend
	}
	return ops.OK
}
