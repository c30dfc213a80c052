package vma

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// CheckInvariants checks what must hold of every vma state, whoever made
// it: the break lies in the heap area; the window's VMAs come first, then
// the heap area's, each region's in address order, not empty, not
// overlapping and inside the region; maps and smaps agree (s only with
// ms, an access bit only with its VM_MAY* bit); lf comes only with lo,
// and the exclusive advice flags (hg/nh, rr/sr) never come together; only
// an anonymous private VMA of the heap area is [heap], and such a VMA
// shows offset 0.
func CheckInvariants(s ops.Snapshot) error {
	st := s.VMA
	if st.Brk < 0 || st.Brk > ops.VMAHeapPages {
		return fmt.Errorf("break %d outside the heap area (0..%d)", st.Brk, ops.VMAHeapPages)
	}
	for i, v := range st.VMAs {
		if err := checkVMA(v); err != nil {
			return fmt.Errorf("%s: %w", ops.FormatVMA(v), err)
		}
		if i == 0 {
			continue
		}
		prev := st.VMAs[i-1]
		switch {
		case prev.Region() > v.Region():
			return fmt.Errorf("%s: out of the regions' order (the window's VMAs, the heap area's, the THP area's)", ops.FormatVMA(v))
		case prev.Region() == v.Region() && v.Start < prev.End:
			return fmt.Errorf("%s: overlaps or comes before %s", ops.FormatVMA(v), ops.FormatVMA(prev))
		}
	}
	return nil
}

// exclusive are VmFlags pairs no VMA carries together; implied are flags
// that come only with another.
var (
	exclusive = [][2]string{{"hg", "nh"}, {"rr", "sr"}}
	implied   = [][2]string{{"lf", "lo"}}
	mayBits   = []struct {
		perm ops.VMAPerms
		may  string
	}{{ops.PermRead, "mr"}, {ops.PermWrite, "mw"}, {ops.PermExec, "me"}}
)

// checkVMA checks one VMA on its own.
func checkVMA(v ops.VMA) error {
	if v.Start < 0 || v.End <= v.Start || v.End > ops.VMARegionLimit(v.Region()) {
		return fmt.Errorf("empty or outside its region (0..%d)", ops.VMARegionLimit(v.Region()))
	}
	has := func(m string) bool { f, _ := ops.VMAFlag(m); return v.Flags&f != 0 }
	if (v.Perms&ops.PermShared != 0) != has("ms") {
		return fmt.Errorf("maps shows %s but smaps ms is %v", v.Perms, has("ms"))
	}
	for _, b := range mayBits {
		if v.Perms&b.perm != 0 && !has(b.may) {
			return fmt.Errorf("permission %s without %s", v.Perms, b.may)
		}
	}
	for _, p := range exclusive {
		if has(p[0]) && has(p[1]) {
			return fmt.Errorf("both %s and %s", p[0], p[1])
		}
	}
	for _, p := range implied {
		if has(p[0]) && !has(p[1]) {
			return fmt.Errorf("%s without %s", p[0], p[1])
		}
	}
	anon := v.File == 0 && v.Shm == 0
	if v.HeapLabel && (!v.Heap || !anon) {
		return fmt.Errorf("[heap] on a VMA that is not anonymous memory of the heap area")
	}
	if anon && v.Offset != 0 {
		return fmt.Errorf("anonymous private memory with offset %d", v.Offset)
	}
	return nil
}
