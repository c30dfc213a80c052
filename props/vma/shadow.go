package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// The three regions, as indices of the shadow's arrays.
const (
	window = 0
	heap   = 1
	thp    = 2
)

// The shadow draws the THP area in units of thpUnit pages, thpUnits of
// them: the same sixty-four places as the window's, each a sixteenth of a
// PMD, so that the window's neighbours, holes and moves are drawn there
// too, at a scale where one mapping can hold a huge page (32 units,
// aligned). Step turns them into pages.
const (
	thpUnit  = ops.VMATHPPages / ops.VMAWindowPages
	thpUnits = ops.VMAWindowPages
)

// page is the generator's idea of one page of a region: whether it is
// mapped and with what, as the operations drawn so far asked for it. It
// steers the choices; it is not what the kernel would do.
type page struct {
	mapped bool
	prot   ops.VMAProt
	// flags are the lasting mmap flags the page was mapped with (shared,
	// noreserve, stack, locked).
	flags ops.VMAMapFlags
	// file is the handle mapped (0: anonymous) and off the file page.
	file int
	off  int64
	// written: a write reached the page's mapping while it was private (it
	// has an anon_vma).
	written bool
	// advice has a bit per flag-changing advice family set on the page.
	advice uint16
	// locked: mlock reached the page.
	locked bool
	// home is where the page was mapped before a move (-1: never moved).
	home int64
}

// lasting are the mmap flags a VMA keeps (populate is a one-time action).
const lasting = ops.MapShared | ops.MapNoReserve | ops.MapStack | ops.MapLocked

// alike reports whether b, right after a, looks like the same mapping: the
// same protection, flags, advice, lock and description, at the next file
// page.
func alike(a, b page) bool {
	return a.mapped && b.mapped && a.prot == b.prot && a.flags == b.flags && a.file == b.file &&
		a.advice == b.advice && a.locked == b.locked && (a.file == 0 || b.off == a.off+1)
}

// span is a range of pages of a region: [start, end).
type span struct{ start, end int64 }

func (s span) pages() int64 { return s.end - s.start }

// space is the generator's picture of the three regions and the break.
type space struct {
	pages [3][ops.VMAWindowPages]page
	brk   int64
}

func limit(r int) int64 {
	switch r {
	case heap:
		return ops.VMAHeapPages
	case thp:
		return thpUnits
	}
	return ops.VMAWindowPages
}

// regionOf is the region of the vocabulary r stands for.
func regionOf(r int) ops.VMARegion {
	switch r {
	case heap:
		return ops.RegionHeap
	case thp:
		return ops.RegionTHP
	}
	return ops.RegionWindow
}

func (s *space) at(r int, p int64) page {
	if p < 0 || p >= limit(r) {
		return page{}
	}
	return s.pages[r][p]
}

// runs lists the maximal runs of alike mapped pages of region r below end.
func (s *space) runs(r int, end int64) []span {
	var out []span
	for p := int64(0); p < end; p++ {
		cur := s.pages[r][p]
		switch {
		case !cur.mapped:
		case p > 0 && alike(s.pages[r][p-1], cur) && len(out) > 0 && out[len(out)-1].end == p:
			out[len(out)-1].end = p + 1
		default:
			out = append(out, span{p, p + 1})
		}
	}
	return out
}

// holes lists the maximal unmapped runs of region r below end that have a
// mapped page on at least one side.
func (s *space) holes(r int, end int64) []span {
	var out []span
	for p := int64(0); p < end; p++ {
		if s.pages[r][p].mapped {
			continue
		}
		if len(out) > 0 && out[len(out)-1].end == p {
			out[len(out)-1].end = p + 1
		} else {
			out = append(out, span{p, p + 1})
		}
	}
	kept := out[:0]
	for _, h := range out {
		if s.at(r, h.start-1).mapped || s.at(r, h.end).mapped {
			kept = append(kept, h)
		}
	}
	return kept
}

// mapped reports whether any page of [start, end) of r is mapped.
func (s *space) anyMapped(r int, start, end int64) bool {
	for p := max(start, 0); p < min(end, limit(r)); p++ {
		if s.pages[r][p].mapped {
			return true
		}
	}
	return false
}

// doMap records a map of [start, start+n) with the attributes of like (its
// off is the first page's).
func (s *space) doMap(r int, start, n int64, like page, populate bool) {
	like.mapped, like.home, like.advice, like.locked = true, -1, 0, like.flags&ops.MapLocked != 0
	like.written = (populate || like.locked) && like.flags&ops.MapShared == 0 && like.prot&ops.ProtWrite != 0
	for i := int64(0); i < n && start+i < limit(r); i++ {
		p := like
		p.off = like.off + i
		s.pages[r][start+i] = p
	}
}

func (s *space) doUnmap(r int, start, n int64) {
	for p := max(start, 0); p < min(start+n, limit(r)); p++ {
		s.pages[r][p] = page{}
	}
}

// each calls f for the pages of [start, start+n) of r from start up to the
// first hole (where mprotect and mlock stop).
func (s *space) each(r int, start, n int64, f func(*page)) {
	for p := start; p < min(start+n, limit(r)); p++ {
		if !s.pages[r][p].mapped {
			return
		}
		f(&s.pages[r][p])
	}
}

// doWrite records a write to page p: its whole run gets an anon_vma.
func (s *space) doWrite(r int, p int64) {
	pg := s.at(r, p)
	if !pg.mapped || pg.prot&ops.ProtWrite == 0 || pg.flags&ops.MapShared != 0 {
		return
	}
	for _, run := range s.runs(r, limit(r)) {
		if run.start <= p && p < run.end {
			for q := run.start; q < run.end; q++ {
				s.pages[r][q].written = true
			}
		}
	}
}

// doMove records a move of [from, from+n) to [to, to+n).
func (s *space) doMove(r int, from, n, to int64) {
	var moved []page
	for p := from; p < from+n; p++ {
		pg := s.at(r, p)
		if pg.mapped && pg.home < 0 {
			pg.home = p
		}
		moved = append(moved, pg)
	}
	s.doUnmap(r, from, n)
	s.doUnmap(r, to, n)
	for i, pg := range moved {
		if to+int64(i) < limit(r) {
			s.pages[r][to+int64(i)] = pg
		}
	}
}

// doLeave records what MREMAP_DONTUNMAP leaves at [start, start+n): the
// mappings stay, emptied (unwritten, as after the unlink of a whole
// VMA's anon_vma) and unlocked.
func (s *space) doLeave(r int, start, n int64) {
	for p := start; p < min(start+n, limit(r)); p++ {
		if pg := &s.pages[r][p]; pg.mapped {
			pg.written, pg.locked, pg.flags = false, false, pg.flags&^ops.MapLocked
		}
	}
}

// doBrk records a break moved to b (in pages above the initial break) the
// way the kernel would: growth needs a free page before the next mapping.
func (s *space) doBrk(b int64) {
	switch {
	case b < 0 || b == s.brk:
		return
	case b < s.brk:
		s.doUnmap(heap, b, s.brk-b)
		s.brk = b
	case !s.anyMapped(heap, s.brk, b+1):
		s.doMap(heap, s.brk, b-s.brk, page{prot: ops.ProtRead | ops.ProtWrite}, false)
		s.brk = b
	}
}
