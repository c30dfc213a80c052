package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Protect implements ops.AddressSpace: mprotect (do_mprotect_pkey). It walks
// the VMAs of the range in order, each step starting from the previous
// one's result, and stops at the first hole with ENOMEM; what it changed
// before stays changed.
func (s *Space) Protect(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	if a.Pages == 0 {
		return ops.OK, nil
	}
	start := s.abs(a.Region(), a.Start)
	end := start + a.Pages
	v := s.layout.Find(start)
	if v == nil || v.Start >= end || v.Start > start {
		return ops.ENOMEM, nil
	}
	return s.fixupRange(v, start, end, func(v *VMA, pprev **VMA, from, to int64) (*VMA, ops.Errno) {
		newflags, errno := s.mprotectFlags(v, a.Prot)
		if errno != ops.OK {
			return nil, errno
		}
		if v.Flags&VMSealed != 0 {
			return nil, ops.EPERM // mprotect_fixup: a sealed VMA, after the VMAs before it changed
		}
		return s.mprotectFixup(v, pprev, from, to, newflags), ops.OK
	}), nil
}

// fixupRange walks the VMAs of [start, end) in order from v, the first
// of them, as mprotect and mlock do: each step starts from the previous
// one's result, a hole stops the walk with ENOMEM, and what changed
// before it stays changed. fixup changes v's part [from, to), *pprev
// being the VMA before it, and returns the VMA that ends there, or an
// errno that stops the walk.
func (s *Space) fixupRange(v *VMA, start, end int64, fixup func(v *VMA, pprev **VMA, from, to int64) (*VMA, ops.Errno)) ops.Errno {
	prev := s.layout.Before(v.Start)
	if start > v.Start {
		prev = v
	}
	nstart, tmp := start, v.Start
	for ; v != nil && v.Start < end; v = s.layout.Find(tmp) {
		if v.Start != tmp {
			return ops.ENOMEM
		}
		res, errno := fixup(v, &prev, nstart, min(v.End, end))
		if errno != ops.OK {
			return errno
		}
		tmp, nstart = res.End, res.End
	}
	if tmp < end {
		return ops.ENOMEM
	}
	return ops.OK
}

// mprotectFlags computes v's new flags for prot: the new access bits, the
// protection key arch_override_mprotect_pkey picks, the other flags kept;
// EACCES if prot asks for what VM_MAY* forbids.
func (s *Space) mprotectFlags(v *VMA, prot ops.VMAProt) (Flags, ops.Errno) {
	newflags := protFlags(prot) | s.mprotectPkey(v, prot) | v.Flags&^(vmAccessFlags|VMPkeyExecOnly)
	if newflags&vmAccessFlags&^mayAccess(newflags) != 0 {
		return 0, ops.EACCES
	}
	return newflags, ops.OK
}

// mayAccess turns VM_MAYREAD/WRITE/EXEC into the access bits they allow.
func mayAccess(f Flags) Flags {
	var may Flags
	if f&VMMayRead != 0 {
		may |= VMRead
	}
	if f&VMMayWrite != 0 {
		may |= VMWrite
	}
	if f&VMMayExec != 0 {
		may |= VMExec
	}
	return may
}

// mprotectPkey is arch_override_mprotect_pkey for a plain mprotect: an
// execute-only VMA given more than exec goes back to key 0; exec alone gets
// the execute-only key; anything else keeps the VMA's key.
func (s *Space) mprotectPkey(v *VMA, prot ops.VMAProt) Flags {
	if s.rules.Quirks&ops.QuirkExecOnlyPkey == 0 {
		return 0
	}
	if v.Flags&vmAccessFlags == VMExec && v.Flags&VMPkeyExecOnly != 0 && prot != ops.ProtExec {
		return 0
	}
	if prot == ops.ProtExec {
		return VMPkeyExecOnly
	}
	return v.Flags & VMPkeyExecOnly
}

// mprotectFixup applies newflags to [start, end) of v: VM_ACCOUNT is added
// when a private mapping becomes writable, dropped when an unfaulted
// anonymous one stops being so; then vma_modify_flags merges or splits.
func (s *Space) mprotectFixup(v *VMA, pprev **VMA, start, end int64, newflags Flags) *VMA {
	old := v.Flags
	if newflags == old {
		*pprev = v
		return v
	}
	switch {
	case newflags&VMWrite != 0:
		if old&(VMAccount|VMWrite|VMHugeTLB|VMShared|VMNoReserve) == 0 {
			newflags |= VMAccount
		}
	case old&VMAccount != 0 && v.File == nil && v.Anon == nil && s.rules.Quirks&ops.QuirkAccountDrop != 0:
		newflags &^= VMAccount
	}
	res := s.vmaModifyFlags(*pprev, v, start, end, &newflags)
	*pprev = res
	res.Flags = newflags
	if newflags&VMWrite != 0 && old&VMLocked != 0 && old&(VMWrite|VMShared) == 0 {
		s.populateVMAPageRange(res, start, end) // break COW on a locked VMA
	}
	return res
}
