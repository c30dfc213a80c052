package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// badKinds are the deliberately invalid requests bad draws, each named by
// the errno it is after.
const (
	badZeroMap     = iota // map of no pages: EINVAL
	badZeroUnmap          // unmap of no pages: EINVAL
	badZeroRemap          // mremap to no pages: EINVAL
	badOverlap            // mremap to a target overlapping the source: EINVAL
	badDupPrivate         // mremap of no pages of a private mapping: EINVAL
	badWipeShared         // madvise wipeonfork on a shared mapping: EINVAL
	badGuardLocked        // madvise guard_install on a locked mapping: EINVAL
	badHole               // mprotect, mlock, munlock, madvise over a hole: ENOMEM
	badBrkLow             // brk below its start: ENOMEM
	badBrkNext            // brk up to a mapping: ENOMEM
	badGrowInto           // mremap growth into a mapping: ENOMEM
	badTouch              // touch of an unmapped or read-only page: EFAULT
	badRemapSpan          // mremap of a range over two mappings or a hole: EFAULT
	badSharedRO           // shared writable map of a read-only description: EACCES
	badProtectRO          // mprotect +w of such a shared mapping: EACCES
	numBad
)

// bad draws a deliberately invalid request (falling back on another kind
// when the state offers nothing to fail on).
func (s *Shadow) bad(src Source) ops.Op {
	r := s.region(src)
	switch src.Intn(numBad, "bad") {
	case badZeroMap:
		start := s.pickPoint(src, r)
		return mapOp(r, start, 0, page{prot: rw}, false)
	case badZeroUnmap:
		return rangeOp(ops.KindUnmap, r, s.pickPoint(src, r), 0)
	case badZeroRemap:
		start, n := s.pickRange(src, r)
		return remapOp(r, start, n, 0)
	case badOverlap:
		return s.badOverlap(src, r)
	case badDupPrivate:
		start, _ := s.pickRange(src, r)
		n := min(2, limit(r)-start)
		return remapToOp(r, start, 0, n, min(start+n+1, limit(r)-n))
	case badWipeShared, badGuardLocked:
		start, n := s.pickRange(src, r)
		return adviseOp(r, start, n, engine.Pick(src, []ops.VMAAdvice{ops.AdviceWipeOnFork, ops.AdviceGuardInstall}, "advice"))
	case badHole:
		return s.badHole(src, r)
	case badBrkLow:
		return brkOp(-1 - int64(src.Intn(ops.VMABrkBelow, "below")))
	case badBrkNext:
		return s.brkOp(src)
	case badGrowInto:
		return s.badGrowInto(src, r)
	case badTouch:
		return touchOp(r, s.pickPoint(src, r), src.Intn(3, "write?") != 2)
	case badRemapSpan:
		return s.badRemapSpan(src, r)
	case badSharedRO, badProtectRO:
		return s.badReadOnly(src)
	}
	return s.touch(src, r)
}

// badOverlap moves a range onto a target that overlaps it.
func (s *Shadow) badOverlap(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	n = max(2, min(n, limit(r)-1))
	start = min(start, limit(r)-n)
	target := start + 1
	if target+n > limit(r) || src.Intn(2, "overlap left") == 0 && start > 0 {
		target = start - 1
	}
	return remapToOp(r, start, n, n, target)
}

// badHole changes a range that starts in a run and reaches over the hole
// after it (mprotect and mlock stop at the hole, madvise goes on; all end
// in ENOMEM), or one that starts in a hole.
func (s *Shadow) badHole(src Source, r int) ops.Op {
	holes := s.holes(r, limit(r))
	if len(holes) == 0 {
		return s.protect(src, r)
	}
	h := engine.Pick(src, holes, "hole")
	start := max(0, h.start-1-int64(src.Intn(2, "before")))
	if src.Intn(3, "start in the hole?") == 2 {
		start = h.start
	}
	n := max(1, min(h.end+1+int64(src.Intn(2, "after")), limit(r))-start)
	switch src.Intn(4, "which") {
	case 0:
		return protectOp(r, start, n, s.neighbourProt(src, r, start, n))
	case 1:
		return lockOp(r, start, n, src.Intn(2, "onfault") == 0)
	case 2:
		return rangeOp(ops.KindUnlock, r, start, n)
	}
	return adviseOp(r, start, n, engine.Pick(src, adviceFamilies, "advice")[0])
}

// badGrowInto grows a run in place into the mapping after it.
func (s *Shadow) badGrowInto(src Source, r int) ops.Op {
	for _, run := range s.runs(r, limit(r)) {
		if s.at(r, run.end).mapped && src.Intn(2, "this run?") == 0 {
			return remapOp(r, run.start, run.pages(), min(run.pages()+1+int64(src.Intn(2, "more")), limit(r)-run.start))
		}
	}
	return s.grow(src, r)
}

// badRemapSpan moves or grows a range that covers two runs or starts in a
// hole.
func (s *Shadow) badRemapSpan(src Source, r int) ops.Op {
	runs := s.runs(r, limit(r))
	if len(runs) < 2 {
		return s.moveAway(src, r)
	}
	i := src.Intn(len(runs)-1, "run")
	start, end := runs[i].end-1, runs[i+1].start+1
	if src.Intn(3, "start in the hole?") == 2 && runs[i+1].start > runs[i].end {
		start = runs[i].end
	}
	n := end - start
	if src.Intn(2, "grow or move") == 0 {
		return remapOp(r, start, n, min(n+1, limit(r)-start))
	}
	t, ok := s.target(src, r, start, n, n)
	if !ok {
		return remapOp(r, start, n, min(n+1, limit(r)-start))
	}
	return remapToOp(r, start, n, n, t)
}

// badReadOnly asks for a shared writable mapping of a read-only
// description, or write permission on one (EACCES), opening a read-only
// description first if there is none.
func (s *Shadow) badReadOnly(src Source) ops.Op {
	var roh []int
	for _, h := range s.bound() {
		if s.handles[h].readOnly {
			roh = append(roh, h)
		}
	}
	if len(roh) == 0 {
		h := 0
		for c := ops.VMAMaxHandles; c >= 1; c-- {
			if !s.handles[c].bound {
				h = c
			}
		}
		if h == 0 {
			return s.touch(src, window)
		}
		s.files++
		s.descs++
		s.handles[h] = handle{bound: true, desc: s.descs, file: s.files, readOnly: true}
		// The request comes next, before a follow-up it may queue.
		next := s.badReadOnly(src)
		s.pending = append([]ops.Op{next}, s.pending...)
		return openOp(h, true)
	}
	h := engine.Pick(src, roh, "handle")
	for p := int64(0); p < ops.VMAWindowPages; p++ {
		if pg := s.pages[window][p]; pg.mapped && pg.file == h && pg.flags&ops.MapShared != 0 && src.Intn(2, "protect it?") == 0 {
			return protectOp(window, p, 1, rw)
		}
	}
	start := s.pickPoint(src, window)
	n := min(1+int64(src.Intn(3, "pages")), ops.VMAWindowPages-start)
	if src.Intn(2, "map it readable first?") == 0 {
		// A shared mapping of the description that it allows (read
		// only), then mprotect to writable: EACCES, as VM_MAYWRITE is
		// not set.
		op := s.mapping(src, window, start, n, page{prot: ops.ProtRead, flags: ops.MapShared, file: h, off: start})
		s.pending = append(s.pending, protectOp(window, start, 1, rw))
		return op
	}
	return mapOp(window, start, n, page{prot: rw, flags: ops.MapShared, file: h, off: start}, false)
}
