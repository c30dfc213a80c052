package vma

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Check verifies what the space's own bookkeeping must keep whatever the
// quirks and the operations: the layout holds Len VMAs in address order,
// none empty, none overlapping the next, each inside the window or the
// heap area; a lookup finds each VMA from its first and its last page and
// the one before it from its start (so the tree's order is the VMAs'
// order); a guard marker lies on a mapped page; the break lies in the heap
// area. It walks the layout (its counts go up): tests call it, never an
// operation.
func (s *Space) Check() error {
	all := s.layout.All()
	if n := s.layout.Len(); n != len(all) {
		return fmt.Errorf("vma: the layout counts %d VMAs but holds %d", n, len(all))
	}
	var prev *VMA
	for _, v := range all {
		if v.Start >= v.End {
			return fmt.Errorf("vma: empty VMA [%d, %d)", v.Start, v.End)
		}
		if !s.inRegion(v) {
			return fmt.Errorf("vma: VMA [%d, %d) lies in neither region", v.Start, v.End)
		}
		if prev != nil && v.Start < prev.End {
			return fmt.Errorf("vma: VMA [%d, %d) overlaps or comes before [%d, %d)", v.Start, v.End, prev.Start, prev.End)
		}
		if f := s.layout.Find(v.Start); f != v {
			return fmt.Errorf("vma: a lookup of page %d does not find its VMA [%d, %d)", v.Start, v.Start, v.End)
		}
		if f := s.layout.Find(v.End - 1); f != v {
			return fmt.Errorf("vma: a lookup of page %d does not find its VMA [%d, %d)", v.End-1, v.Start, v.End)
		}
		if b := s.layout.Before(v.Start); b != prev {
			return fmt.Errorf("vma: the VMA before [%d, %d) is not the previous one", v.Start, v.End)
		}
		prev = v
	}
	for p := range s.guards {
		if v := s.layout.Find(p); v == nil || v.Start > p {
			return fmt.Errorf("vma: a guard marker on page %d, which nothing maps", p)
		}
	}
	if s.brk < s.startBrk || s.brk > s.startBrk+ops.VMAHeapPages {
		return fmt.Errorf("vma: break %d outside the heap area [%d, %d]", s.brk, s.startBrk, s.startBrk+ops.VMAHeapPages)
	}
	return nil
}

// inRegion: v lies inside the window, the heap area or the THP area.
func (s *Space) inRegion(v *VMA) bool {
	in := func(base, pages int64) bool { return v.Start >= base && v.End <= base+pages }
	return in(windowBase, s.windowPages()) || in(heapBase, ops.VMAHeapPages) || in(thpBase, ops.VMATHPPages)
}
