package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Seal implements ops.AddressSpace: mseal (mm/mseal.c). An empty range is
// a success that changes nothing; a range with a hole is ENOMEM before any
// change; otherwise every VMA of the range not sealed yet gets VM_SEALED
// through vma_modify_flags (split at the ends, merged with sealed
// neighbours), walking left to right from the previous step's result.
// Without the system call (QuirkMseal unset) it is ENOSYS.
func (s *Space) Seal(a ops.VMAArgs) (ops.Errno, error) {
	if err := ops.CheckVMAArgs(a); err != nil {
		return 0, err
	}
	if s.rules.Quirks&ops.QuirkMseal == 0 {
		return ops.ENOSYS, nil
	}
	if a.Pages == 0 {
		return ops.OK, nil
	}
	start := s.abs(a.Region(), a.Start)
	end := start + a.Pages
	if s.rangeContainsUnmapped(start, end) {
		return ops.ENOMEM, nil
	}
	s.msealApply(start, end)
	return ops.OK, nil
}

// rangeContainsUnmapped: some page of [start, end) has no VMA.
func (s *Space) rangeContainsUnmapped(start, end int64) bool {
	prevEnd := start
	for v := s.layout.Find(start); v != nil && v.Start < end; v = s.layout.Find(v.End) {
		if v.Start > prevEnd {
			return true
		}
		prevEnd = v.End
	}
	return prevEnd < end
}

// msealApply is mseal_apply: the range has no hole.
func (s *Space) msealApply(start, end int64) {
	v := s.layout.Find(start)
	prev := s.layout.Before(v.Start)
	if start > v.Start {
		prev = v
	}
	for v != nil && v.Start < end {
		if v.Flags&VMSealed == 0 {
			flags := v.Flags | VMSealed
			v = s.vmaModifyFlags(prev, v, max(v.Start, start), min(v.End, end), &flags)
			v.Flags = flags
		}
		prev = v
		v = s.layout.Find(v.End)
	}
}
