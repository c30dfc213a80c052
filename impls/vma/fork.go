package vma

import (
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Fork implements ops.AddressSpace: the space becomes the child's copy of
// itself, as dup_mmap makes it (kernel/fork.c, mm/mmap.c):
//
//   - a VM_DONTCOPY VMA is not copied (its guard markers go with it);
//   - VM_LOCKED and VM_LOCKONFAULT are not inherited;
//   - a VM_WIPEONFORK VMA starts with no anon_vma and no page tables (its
//     guard markers are not copied);
//   - any other VMA with an anon_vma gets one of its own (anon_vma_fork),
//     chained to the parent's: a fork child, which merges only with pieces
//     of itself. Split pieces of one parent VMA get one anon_vma each, so
//     they no longer merge with each other;
//   - guard markers are copied where the page tables are: a VMA with an
//     anon_vma, or any VMA where guard regions are copied on fork
//     (VM_MAYBE_GUARD, ops.QuirkStickyGuard).
//
// Nothing merges; the files, the break and the heap stay as they are.
func (s *Space) Fork() (ops.Errno, error) {
	s.leaked = 0 // the child's mm starts with locked_vm 0
	for _, v := range slices.Clone(s.layout.All()) {
		if v.Flags&VMDontCopy != 0 {
			s.dropGuards(v)
			s.layout.Remove(v)
			continue
		}
		v.Flags &^= vmLockedMask
		keepGuards := v.Anon != nil || s.rules.Quirks&ops.QuirkStickyGuard != 0
		switch {
		case v.Flags&VMWipeOnFork != 0:
			v.Anon, v.ForkChild = nil, false
			keepGuards = false
		case v.Anon != nil:
			s.nextAnon++
			v.Anon, v.ForkChild = &AnonVMA{ID: s.nextAnon}, true
		}
		if !keepGuards {
			s.dropGuards(v)
		}
	}
	return ops.OK, nil
}

// dropGuards removes the guard markers of v's pages.
func (s *Space) dropGuards(v *VMA) {
	for p := v.Start; p < v.End; p++ {
		delete(s.guards, p)
	}
}
