package vma

import (
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// grow draws an mremap that grows a range in place: mostly one that ends
// where its run does (it may merge with the next mapping), sometimes one
// that does not (ENOMEM).
func (s *Shadow) grow(src Source, r int) ops.Op {
	if gaps := s.alikeGaps(r); len(gaps) > 0 && src.Intn(2, "up to an alike run?") == 0 {
		g := engine.Pick(src, gaps, "gap")
		s.remember(r, g.left.start, g.right.start)
		like := s.at(r, g.left.end-1)
		like.off++
		s.doMap(r, g.left.end, g.right.start-g.left.end, like, false)
		return remapOp(r, g.left.start, g.left.pages(), g.right.start-g.left.start)
	}
	run, ok := s.pickRun(src, r)
	if !ok {
		return s.mapAnywhere(src, r)
	}
	start := run.start
	if src.Intn(3, "from inside?") == 2 {
		start += int64(src.Intn(int(run.pages()), "inside"))
	}
	old := run.end - start
	if oneIn(src, 6, "not to the end?") && old > 1 {
		old--
	}
	newPages := min(old+1+int64(src.Intn(3, "more")), limit(r)-start)
	if newPages <= old {
		return s.shrink(src, r)
	}
	inPlace := start+old == run.end && !s.anyMapped(r, run.end, start+newPages)
	if inPlace {
		like := s.at(r, run.end-1)
		like.off++
		written := like.written
		s.doMap(r, run.end, start+newPages-run.end, like, false)
		s.each(r, run.end, start+newPages-run.end, func(p *page) { p.written = written })
	}
	s.remember(r, start, start+newPages)
	op := remapOp(r, start, old, newPages)
	if r == window && oneIn(src, 3, "maymove?") {
		// the kernel picks the place when it cannot grow in place; the
		// shadow only knows the range left
		op.VMA.MayMove = true
		if !inPlace {
			s.doUnmap(r, start, old)
		}
	}
	return op
}

// alikeGaps lists the runs of r followed, after a short gap, by a run
// alike them (at the file offset the gap would take): growing the first
// over the gap may merge all.
func (s *Shadow) alikeGaps(r int) []pair {
	var out []pair
	runs := s.runs(r, limit(r))
	for i := 1; i < len(runs); i++ {
		gap := runs[i].start - runs[i-1].end
		a, b := s.at(r, runs[i-1].end-1), s.at(r, runs[i].start)
		b.off -= gap
		if gap > 0 && gap <= 4 && alike(a, b) {
			out = append(out, pair{left: runs[i-1], right: runs[i]})
		}
	}
	return out
}

// shrink draws an mremap that shrinks part of a run in place.
func (s *Shadow) shrink(src Source, r int) ops.Op {
	run, ok := s.pickRun(src, r)
	if !ok || run.pages() < 2 {
		return s.mapAnywhere(src, r)
	}
	start, old := partOf(src, run)
	start = min(start, limit(r)-2)
	old = max(2, min(old, limit(r)-start))
	newPages := 1 + int64(src.Intn(int(old-1), "new pages"))
	s.doUnmap(r, start+newPages, old-newPages)
	s.remember(r, start+newPages, start+old)
	return remapOp(r, start, old, newPages)
}

// moveAway draws an mremap of part of a run to a fixed target: a free
// place with room around it, next to another mapping (where it may merge),
// anywhere, or over other mappings; mostly keeping the size.
func (s *Shadow) moveAway(src Source, r int) ops.Op {
	run, ok := s.pickRun(src, r)
	if !ok {
		return s.mapAnywhere(src, r)
	}
	if r == thp && oneIn(src, 3, "a half to the other?") {
		// Both ends aligned to a PMD: a huge page moves whole
		// (move_huge_pmd), page tables move a PMD at a time.
		halves := []int64{0, thpUnits / 2}
		if run.start%(thpUnits/2) == 0 && run.pages() >= thpUnits/2 {
			halves = []int64{run.start, run.start, 0, thpUnits / 2}
		}
		from := engine.Pick(src, halves, "half")
		s.doMove(r, from, thpUnits/2, thpUnits/2-from)
		s.moves = append(s.moves, move{region: r, from: from, to: thpUnits/2 - from, size: thpUnits / 2})
		return remapToOp(r, from, thpUnits/2, thpUnits/2, thpUnits/2-from)
	}
	start, old := run.start, run.pages()
	if src.Intn(3, "part?") == 2 {
		start, old = partOf(src, run)
		old = min(old, limit(r)-start)
	}
	newPages := old
	if oneIn(src, 5, "resize too?") {
		newPages = max(1, old+engine.Pick(src, []int64{1, -1, 2}, "resize"))
	}
	newPages = min(newPages, limit(r)-start)
	// MREMAP_DONTUNMAP, more often of locked pages (the source is
	// unlocked, and split first or not as the version does).
	dontUnmap := newPages == old && (oneIn(src, 5, "dontunmap?") || s.at(r, start).locked && oneIn(src, 3, "dontunmap of locked pages?"))
	if dontUnmap && r == window && oneIn(src, 4, "where the kernel picks?") {
		s.doLeave(r, start, old)
		op := remapOp(r, start, old, old)
		op.VMA.MayMove, op.VMA.DontUnmap = true, true
		return op
	}
	target, ok := s.target(src, r, start, old, newPages)
	if !ok {
		return s.grow(src, r)
	}
	if dontUnmap {
		left := slices.Clone(s.pages[r][start : start+old])
		s.doMove(r, start, old, target)
		copy(s.pages[r][start:start+old], left)
		s.doLeave(r, start, old)
		s.moves = append(s.moves, move{region: r, from: start, to: target, size: old})
		s.remember(r, target, target+old)
		op := remapToOp(r, start, old, old, target)
		op.VMA.DontUnmap = true
		return op
	}
	s.doMove(r, start, min(old, newPages), target)
	s.moves = append(s.moves, move{region: r, from: start, to: target, size: min(old, newPages)})
	if len(s.moves) > 4 {
		s.moves = s.moves[1:]
	}
	s.remember(r, target, target+newPages)
	return remapToOp(r, start, old, newPages, target)
}

// target draws where a move of [start, start+old) with newPages pages
// lands; false if no place outside the source fits.
func (s *Shadow) target(src Source, r int, start, old, newPages int64) (int64, bool) {
	var cands []int64
	fits := func(t int64) bool {
		return t >= 0 && t+newPages <= limit(r) && (t+newPages <= start || t >= start+old)
	}
	switch src.Intn(4, "target") {
	case 0:
		for t := int64(1); t+newPages < limit(r); t++ {
			if fits(t) && !s.anyMapped(r, t-1, t+newPages+1) {
				cands = append(cands, t)
			}
		}
	case 1:
		for _, run := range s.runs(r, limit(r)) {
			for _, t := range []int64{run.end, run.start - newPages} {
				if fits(t) && !s.anyMapped(r, t, t+newPages) {
					cands = append(cands, t)
				}
			}
		}
		for _, h := range s.holes(r, limit(r)) {
			if h.pages() == newPages && fits(h.start) {
				cands = append(cands, h.start, h.start)
			}
		}
	case 2:
		for t := int64(0); t < s.hot[r]; t++ {
			if fits(t) {
				cands = append(cands, t)
			}
		}
	default:
		for t := int64(0); t < limit(r); t++ {
			if fits(t) && s.anyMapped(r, t, t+newPages) {
				cands = append(cands, t)
			}
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	return engine.Pick(src, cands, "target"), true
}

// moveBack moves a range the script moved back where it came from: a
// written anonymous mapping merges there again only because its pgoff
// went with it.
func (s *Shadow) moveBack(src Source) ops.Op {
	i := len(s.moves) - 1
	if src.Intn(3, "latest move?") == 2 {
		i = src.Intn(len(s.moves), "move")
	}
	m := s.moves[i]
	s.moves = append(s.moves[:i:i], s.moves[i+1:]...)
	s.doMove(m.region, m.to, m.size, m.from)
	return remapToOp(m.region, m.to, m.size, m.size, m.from)
}

// brkOp moves the break: a page or two up or down, to the start, as far as
// the next mapping allows (or one page further: ENOMEM), below its start
// (ENOMEM).
func (s *Shadow) brkOp(src Source) ops.Op {
	next := s.brk + 1
	for next < ops.VMAHeapPages && !s.at(heap, next).mapped {
		next++
	}
	b := engine.Pick(src, []int64{s.brk + 1, s.brk + 2, s.brk - 1, s.brk + 4, 0, next - 1, next, s.brk - 3, -1}, "break")
	b = max(-ops.VMABrkBelow, min(b, ops.VMAHeapPages))
	op := brkOp(b)
	if b < ops.VMAHeapPages && oneIn(src, 4, "brk by bytes?") {
		// a break inside a page: the heap reaches the page's end
		op.VMA.BreakBytes = engine.Pick(src, []int64{1, ops.VMAPageBytes / 2, ops.VMAPageBytes - 1, 100}, "break bytes")
		b++
	}
	s.doBrk(b)
	return op
}

// nearBreak draws an operation on the heap area next to the break: a
// mapping at the break (it may merge into [heap]) or a page above it
// (the next brk cannot reach it), a protection of the heap's tail or
// back, an unmap under the break, or a write to the heap.
func (s *Shadow) nearBreak(src Source) ops.Op {
	b := min(s.brk, ops.VMAHeapPages-1)
	heapRW := page{prot: rw}
	switch src.Intn(5, "near the break") {
	case 0:
		return s.mapping(src, heap, b, 1+int64(src.Intn(3, "pages")), heapRW)
	case 1:
		at := min(b+1+int64(src.Intn(3, "above")), ops.VMAHeapPages-1)
		return s.mapping(src, heap, at, 1+int64(src.Intn(2, "pages")), s.freshAttrs(src, heap, at, 1))
	case 2:
		if s.brk > 0 {
			n := 1 + int64(src.Intn(int(min(s.brk, 3)), "tail"))
			prot := engine.Pick(src, []ops.VMAProt{ro, rw, none}, "prot")
			s.each(heap, s.brk-n, n, func(p *page) { p.prot = prot })
			return protectOp(heap, s.brk-n, n, prot)
		}
	case 3:
		if s.brk > 1 {
			at := int64(src.Intn(int(s.brk), "under the break"))
			s.doUnmap(heap, at, 1)
			return rangeOp(ops.KindUnmap, heap, at, 1)
		}
	}
	return s.touch(src, heap)
}

// file binds a new handle: a new file, another description of a file, or
// a dup of a description.
func (s *Shadow) file(src Source) ops.Op {
	h := 0
	for c := 1; c <= ops.VMAMaxHandles && h == 0; c++ {
		if !s.handles[c].bound {
			h = c
		}
	}
	if h == 0 {
		return s.touch(src, window)
	}
	hs := s.bound()
	readOnly := oneIn(src, 4, "rdonly")
	kind := src.Intn(3, "open how")
	if len(hs) == 0 {
		kind = 0
	}
	switch kind {
	case 0:
		s.files++
		s.descs++
		s.handles[h] = handle{bound: true, desc: s.descs, file: s.files, readOnly: readOnly}
		return openOp(h, readOnly)
	case 1:
		of := engine.Pick(src, hs, "of")
		s.descs++
		s.handles[h] = handle{bound: true, desc: s.descs, file: s.handles[of].file, readOnly: readOnly}
		return reopenOp(h, of, readOnly)
	}
	of := engine.Pick(src, hs, "of")
	s.handles[h] = s.handles[of]
	return dupOp(h, of)
}
