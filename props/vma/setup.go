package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// setUp draws the first operations of a script: a layout random steps
// reach rarely, which the rest of the script then works on.
func (s *Shadow) setUp(src Source) []ops.Op {
	a := int64(src.Intn(4, "at"))
	switch src.Intn(6, "set-up") {
	case 1:
		return s.islands(src, a)
	case 2:
		return s.sandwich(src, a)
	case 3:
		return s.movedAway(src, a)
	case 4:
		return s.filePair(src, a)
	case 5:
		return s.heapSetUp(src)
	}
	n := 4 + int64(src.Intn(9, "pages"))
	out := []ops.Op{s.mapping(src, window, a, n, page{prot: engine.Pick(src, protPool, "prot")})}
	if src.Intn(2, "write it?") == 1 {
		out = append(out, s.write(window, a+n/2))
	}
	return out
}

// hugeSetUp maps a PMD-aligned half of the THP area (or all of it),
// read-write or, one time in four, advised hugepage first, and writes it:
// where transparent huge pages are enabled (always, or madvise with the
// advice), the write fault maps a huge page with one PMD.
func (s *Shadow) hugeSetUp(src Source) []ops.Op {
	start := engine.Pick(src, []int64{0, thpUnits / 2}, "half")
	n := min(engine.Pick(src, []int64{thpUnits / 2, thpUnits}, "units"), limit(thp)-start)
	out := []ops.Op{s.mapping(src, thp, start, n, page{prot: rw})}
	if oneIn(src, 4, "advise hugepage?") {
		s.each(thp, start, n, func(p *page) { p.advice |= 1 << famHugePage })
		out = append(out, adviseOp(thp, start, n, ops.AdviceHugePage))
	}
	return append(out, s.write(thp, start+int64(src.Intn(int(n), "unit"))))
}

// write is a write to page p of r.
func (s *Shadow) write(r int, p int64) ops.Op {
	s.doWrite(r, p)
	return touchOp(r, p, true)
}

// islands: two written anonymous mappings with a hole between them, so
// that each has an anon_vma of its own (vma-spec S12, S45).
func (s *Shadow) islands(src Source, a int64) []ops.Op {
	k := 1 + int64(src.Intn(3, "left pages"))
	h := 1 + int64(src.Intn(2, "hole"))
	m := 1 + int64(src.Intn(3, "right pages"))
	b := a + k + h
	return []ops.Op{
		s.mapping(src, window, a, k, page{prot: rw}), s.write(window, a),
		s.mapping(src, window, b, m, page{prot: rw}), s.write(window, b),
	}
}

// sandwich: read-write, read-only, read-write mappings side by side, the
// outer ones written or not (vma-spec S45, S48, S60).
func (s *Shadow) sandwich(src Source, a int64) []ops.Op {
	out := []ops.Op{
		s.mapping(src, window, a, 2, page{prot: rw}),
		s.mapping(src, window, a+2, 2, page{prot: ro}),
		s.mapping(src, window, a+4, 2, page{prot: rw}),
	}
	if src.Intn(3, "write the left?") != 0 {
		out = append(out, s.write(window, a))
	}
	if src.Intn(3, "write the right?") != 0 {
		out = append(out, s.write(window, a+4))
	}
	return out
}

// movedAway: a mapping, written or not, part of which moves to a free
// place (vma-spec S31, S32, S53); moving it back is up to later steps.
func (s *Shadow) movedAway(src Source, a int64) []ops.Op {
	out := []ops.Op{s.mapping(src, window, a, 4, page{prot: rw})}
	if src.Intn(3, "write it?") != 0 {
		out = append(out, s.write(window, a))
	}
	from := a + engine.Pick(src, []int64{2, 0, 3}, "from")
	size := a + 4 - from
	to := 8 + int64(src.Intn(8, "to"))
	s.doMove(window, from, size, to)
	s.moves = append(s.moves, move{region: window, from: from, to: to, size: size})
	return append(out, remapToOp(window, from, size, size, to))
}

// filePair: a file mapped at an offset and again next to it, at the next
// offset or not, with the same handle, a dup or another description
// (vma-spec S16, S17, S18).
func (s *Shadow) filePair(src Source, a int64) []ops.Op {
	out := []ops.Op{s.file(src)}
	h := s.bound()[0]
	shared := ops.VMAMapFlags(0)
	if src.Intn(2, "shared?") == 1 {
		shared = ops.MapShared
	}
	first := s.permitted(page{prot: engine.Pick(src, protPool, "prot"), flags: shared, file: h, off: a})
	out = append(out, s.mapping(src, window, a, 2, first))
	second := s.at(window, a+1)
	second.off++
	if src.Intn(2, "another handle?") == 1 {
		out = append(out, s.file(src))
		second.file = s.sibling(src, h)
		second = s.permitted(second)
	}
	if oneIn(src, 3, "differ?") {
		second = s.vary(src, window, second, a+2, 2)
	}
	return append(out, s.mapping(src, window, a+2, 2, second))
}

// heapSetUp: the break moved up, and a mapping at it or a page above.
func (s *Shadow) heapSetUp(src Source) []ops.Op {
	b := 1 + int64(src.Intn(4, "break"))
	s.doBrk(b)
	out := []ops.Op{brkOp(b)}
	at := b + int64(src.Intn(2, "gap"))
	like := page{prot: rw}
	if oneIn(src, 3, "differ?") {
		like = s.freshAttrs(src, heap, at, 2)
	}
	return append(out, s.mapping(src, heap, at, 2, like))
}
