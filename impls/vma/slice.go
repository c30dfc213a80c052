package vma

import "fmt"

// sliceLayout is the naive Layout: the VMAs in a slice sorted by start.
// Lookups are binary searches (each probe a visited node); insertions and
// removals shift the tail (each shifted element a visited node).
type sliceLayout struct {
	vmas []*VMA
	w    Walks
}

// NewSlice returns an empty sorted-slice Layout.
func NewSlice() Layout { return &sliceLayout{} }

// search returns the first index i at which pred holds (pred is monotone),
// counting the probes.
func (l *sliceLayout) search(pred func(*VMA) bool) int {
	lo, hi := 0, len(l.vmas)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		l.w.Nodes++
		if pred(l.vmas[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Find implements Layout.
func (l *sliceLayout) Find(addr int64) *VMA {
	l.w.Walks++
	i := l.search(func(v *VMA) bool { return v.End > addr })
	if i == len(l.vmas) {
		return nil
	}
	return l.vmas[i]
}

// Before implements Layout.
func (l *sliceLayout) Before(addr int64) *VMA {
	l.w.Walks++
	i := l.search(func(v *VMA) bool { return v.Start >= addr })
	if i == 0 {
		return nil
	}
	return l.vmas[i-1]
}

// Insert implements Layout.
func (l *sliceLayout) Insert(v *VMA) {
	l.w.Walks++
	i := l.search(func(x *VMA) bool { return x.Start >= v.Start })
	if i < len(l.vmas) && l.vmas[i].Start == v.Start {
		panic(fmt.Sprintf("vma: insert of a VMA at %d where one starts already", v.Start))
	}
	l.vmas = append(l.vmas, nil)
	copy(l.vmas[i+1:], l.vmas[i:])
	l.w.Nodes += int64(len(l.vmas) - 1 - i)
	l.vmas[i] = v
}

func (l *sliceLayout) index(v *VMA) int {
	i := l.search(func(x *VMA) bool { return x.Start >= v.Start })
	if i == len(l.vmas) || l.vmas[i] != v {
		panic(fmt.Sprintf("vma: VMA at %d is not in the layout", v.Start))
	}
	return i
}

// Remove implements Layout.
func (l *sliceLayout) Remove(v *VMA) {
	l.w.Walks++
	i := l.index(v)
	copy(l.vmas[i:], l.vmas[i+1:])
	l.vmas[len(l.vmas)-1] = nil
	l.vmas = l.vmas[:len(l.vmas)-1]
	l.w.Nodes += int64(len(l.vmas) - i)
}

// Store implements Layout.
func (l *sliceLayout) Store(v *VMA) {
	l.w.Walks++
	l.index(v)
}

// All implements Layout.
func (l *sliceLayout) All() []*VMA { return append([]*VMA(nil), l.vmas...) }

// Len implements Layout.
func (l *sliceLayout) Len() int { return len(l.vmas) }

// Counts implements Layout.
func (l *sliceLayout) Counts() Walks { return l.w }

// Clear implements Layout.
func (l *sliceLayout) Clear() { l.vmas, l.w = nil, Walks{} }
