package ops

import (
	"slices"
	"strings"
)

// What differs between two observations of an address space, in a word a
// divergence's signature can carry (StepDifference, FinalDifference): two
// layouts or two final states that differ for distinct reasons (one kernel
// merges where the other splits, labels [heap] where the other does not,
// names a flag the other does not) are distinct findings, not one "the
// layouts differ".

// VMADifference names the first thing that differs between two address
// spaces, A's and B's, walked in address order:
//
//	A-merges, B-merges  the same pages with the same attributes, in fewer
//	                    VMAs on A (or on B): one merged where the other split
//	boundaries          the same pages and attributes, split differently
//	only-A, only-B      a VMA whose pages the other side does not map
//	extent              overlapping VMAs whose ranges differ
//	perms, backing, heap-label, pkey
//	                    one VMA's permissions, backing, [heap] label or
//	                    protection key
//	flags+X-Y           one VMA's VmFlags: A has X where B has not, B has Y
//	                    where A has not ("unnamed" for ??)
//	brk                 only the program break
//
// and "" when the states are equal.
func VMADifference(a, b VMAState) string {
	if slices.Equal(a.VMAs, b.VMAs) {
		if a.Brk != b.Brk {
			return "brk"
		}
		return ""
	}
	ma, mb := mergedVMAs(a.VMAs), mergedVMAs(b.VMAs)
	if slices.Equal(ma, mb) {
		switch {
		case len(a.VMAs) < len(b.VMAs):
			return "A-merges"
		case len(b.VMAs) < len(a.VMAs):
			return "B-merges"
		}
		return "boundaries"
	}
	i, j := 0, 0
	for i < len(a.VMAs) && j < len(b.VMAs) {
		va, vb := a.VMAs[i], b.VMAs[j]
		if va == vb {
			i, j = i+1, j+1
			continue
		}
		switch {
		case vmaBefore(va, vb):
			return "only-A"
		case vmaBefore(vb, va):
			return "only-B"
		case va.Start != vb.Start || va.End != vb.End:
			if sameAttributes(va, vb) {
				// The same attributes over overlapping, different ranges:
				// the same pages merged or split differently here
				// (whatever differs further on), or a merge or split the
				// pages after them decide.
				return localMerge(a.VMAs[i:], b.VMAs[j:])
			}
		}
		return vmaFieldDifference(va, vb)
	}
	switch {
	case i < len(a.VMAs):
		return "only-A"
	case j < len(b.VMAs):
		return "only-B"
	}
	return "brk"
}

// vmaFieldDifference names the first attribute of two VMAs that differs,
// in the order of their text, with the range last.
func vmaFieldDifference(va, vb VMA) string {
	switch {
	case va.Perms != vb.Perms:
		return "perms"
	case va.File != vb.File || va.Shm != vb.Shm || va.Offset != vb.Offset:
		return "backing"
	case va.HeapLabel != vb.HeapLabel:
		return "heap-label"
	case va.Pkey != vb.Pkey:
		return "pkey"
	case va.Flags != vb.Flags:
		return "flags" + flagDelta("+", va.Flags&^vb.Flags) + flagDelta("-", vb.Flags&^va.Flags)
	}
	return "extent"
}

// flagDelta is sign and the mnemonics of f joined by commas ("" for none;
// "unnamed" for ??, which no file name should carry).
func flagDelta(sign string, f VMAFlags) string {
	if f == 0 {
		return ""
	}
	return sign + strings.ReplaceAll(f.String(), VMAFlagUnnamed, "unnamed")
}

// vmaBefore reports whether x lies wholly before y in address order (the
// window's VMAs, then the heap area's, then the THP area's).
func vmaBefore(x, y VMA) bool {
	if x.Region() != y.Region() {
		return x.Region() < y.Region()
	}
	return x.End <= y.Start
}

// sameAttributes reports whether two VMAs differ at most in their range
// (and so in the offset their range implies).
func sameAttributes(x, y VMA) bool {
	if x.File != 0 || x.Shm != 0 {
		// The offset of the same page must agree.
		if x.Offset-x.Start != y.Offset-y.Start {
			return false
		}
	} else if x.Offset != y.Offset {
		return false
	}
	x.Start, x.End, x.Offset = y.Start, y.End, y.Offset
	return x == y
}

// mergedVMAs joins every run of adjacent VMAs with the same attributes (and
// offsets that continue) into one: what two sides that merge differently
// agree on.
func mergedVMAs(vs []VMA) []VMA {
	out := make([]VMA, 0, len(vs))
	for _, v := range vs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if joinable(*last, v) {
				last.End = v.End
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

// localMerge names the difference of two runs of VMAs that start with
// overlapping VMAs of the same attributes: where the joinable VMAs that
// follow each cover the same pages (mergedVMAs would join them alike),
// the side with fewer VMAs merged (A-merges, B-merges) or both split them
// differently (boundaries); otherwise their extents differ.
func localMerge(as, bs []VMA) string {
	if as[0].Start != bs[0].Start {
		return "extent"
	}
	na, nb := 1, 1
	endA, endB := as[0].End, bs[0].End
	for endA != endB {
		if endA < endB {
			if na == len(as) || !joinable(as[na-1], as[na]) {
				return "extent"
			}
			endA = as[na].End
			na++
		} else {
			if nb == len(bs) || !joinable(bs[nb-1], bs[nb]) {
				return "extent"
			}
			endB = bs[nb].End
			nb++
		}
	}
	switch {
	case na < nb:
		return "A-merges"
	case nb < na:
		return "B-merges"
	}
	return "boundaries"
}

// joinable reports whether v continues last: adjacent, in the same
// region, with the same attributes (mergedVMAs joins them).
func joinable(last, v VMA) bool {
	return last.Region() == v.Region() && last.End == v.Start && sameAttributes(last, v)
}
