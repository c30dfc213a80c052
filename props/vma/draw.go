package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

const (
	rw   = ops.ProtRead | ops.ProtWrite
	ro   = ops.ProtRead
	none = ops.VMAProt(0)
)

// protPool leans to read-write (the plain choice) and read-only, with every
// other protection in it: exec-only carries a protection key, write-only
// is its own VMA.
var protPool = []ops.VMAProt{rw, rw, ro, ro, none, rw, ro | ops.ProtExec, ops.ProtExec, rw | ops.ProtExec, ops.ProtWrite}

// pickPoint draws a page of region r: an edge of a recent range, or any
// page of the hot part.
func (s *Shadow) pickPoint(src Source, r int) int64 {
	if e := s.edges[r]; len(e) > 0 && src.Intn(2, "at an edge?") == 1 {
		return min(engine.Pick(src, e, "edge"), limit(r)-1)
	}
	return int64(src.Intn(int(s.hot[r]), "page"))
}

// pickRun draws a run of alike mapped pages of r, or false if none.
func (s *Shadow) pickRun(src Source, r int) (span, bool) {
	runs := s.runs(r, limit(r))
	if len(runs) == 0 {
		return span{}, false
	}
	return engine.Pick(src, runs, "run"), true
}

// pickRange draws a range of r: all of a run, its left or right part, its
// inside, one reaching past it, or a range from an edge or anywhere in the
// hot part. It is never empty and stays inside the region.
func (s *Shadow) pickRange(src Source, r int) (start, pages int64) {
	run, ok := s.pickRun(src, r)
	if ok && src.Intn(3, "range of a run?") != 2 {
		start, pages = partOf(src, run)
	} else {
		start = s.pickPoint(src, r)
		pages = 1 + int64(src.Intn(6, "pages"))
	}
	start = min(start, limit(r)-1)
	pages = max(1, min(pages, limit(r)-start))
	s.remember(r, start, start+pages)
	return start, pages
}

// partOf draws a part of run: all of it, its left or right end, its inside,
// or a range from inside it reaching past its end.
func partOf(src Source, run span) (start, pages int64) {
	n := run.pages()
	k := 1 + int64(src.Intn(int(max(n-1, 1)), "part pages"))
	switch src.Intn(5, "part") {
	case 1:
		return run.start, k
	case 2:
		return run.end - k, k
	case 3:
		if n >= 3 {
			in := 1 + int64(src.Intn(int(n-2), "inside"))
			return run.start + in, max(1, min(k, n-1-in))
		}
	case 4:
		return run.end - k, k + 1 + int64(src.Intn(3, "past"))
	}
	return run.start, n
}

// bound lists the handles bound so far.
func (s *Shadow) bound() []int {
	var out []int
	for h := 1; h <= ops.VMAMaxHandles; h++ {
		if s.handles[h].bound {
			out = append(out, h)
		}
	}
	return out
}

// freshAttrs draws the attributes of a new mapping at [start, start+n).
func (s *Shadow) freshAttrs(src Source, r int, start, n int64) page {
	p := page{prot: engine.Pick(src, protPool, "prot")}
	for _, f := range []struct {
		bit ops.VMAMapFlags
		in  int
	}{{ops.MapShared, 8}, {ops.MapNoReserve, 12}, {ops.MapStack, 16}, {ops.MapLocked, 20}} {
		if oneIn(src, f.in, "map flag") {
			p.flags |= f.bit
		}
	}
	if s.limited && p.flags&ops.MapLocked == 0 && oneIn(src, 3, "locked under a limit") {
		p.flags |= ops.MapLocked
	}
	if hs := s.bound(); r == window && len(hs) > 0 && oneIn(src, 3, "file?") {
		p.file = engine.Pick(src, hs, "handle")
		shift := engine.Pick(src, []int64{0, 0, 1, 8, ops.VMAFilePages - 3}, "offset shift")
		p.off = max(0, min(start+shift, ops.VMAFileOffsetMax-n))
	}
	return s.permitted(p)
}

// permitted drops the write permission of a shared mapping of a read-only
// description (which would be EACCES: bad draws ask for that on purpose).
func (s *Shadow) permitted(p page) page {
	if p.file != 0 && s.handles[p.file].readOnly && p.flags&ops.MapShared != 0 {
		p.prot &^= ops.ProtWrite
	}
	return p
}

// mapping draws the map of [start, start+n) with like's attributes and
// records it.
func (s *Shadow) mapping(src Source, r int, start, n int64, like page) ops.Op {
	n = max(1, min(n, limit(r)-start))
	if like.file != 0 && (like.off < 0 || like.off+n > ops.VMAFileOffsetMax) {
		like.file, like.off = 0, 0
	}
	populate := oneIn(src, 10, "populate")
	s.doMap(r, start, n, like, populate)
	s.remember(r, start, start+n)
	return mapOp(r, start, n, like, populate)
}

// mapAnywhere maps a few pages at an edge or anywhere in the hot part; in
// the THP area one time in three a whole PMD-aligned half, or both.
func (s *Shadow) mapAnywhere(src Source, r int) ops.Op {
	if r == thp && oneIn(src, 3, "a huge page's range?") {
		start := engine.Pick(src, []int64{0, thpUnits / 2}, "half")
		n := min(engine.Pick(src, []int64{thpUnits / 2, thpUnits}, "units"), limit(r)-start)
		return s.mapping(src, r, start, n, s.freshAttrs(src, r, start, n))
	}
	start := s.pickPoint(src, r)
	n := 1 + int64(src.Intn(int(min(8, limit(r)-start)), "pages"))
	return s.mapping(src, r, start, n, s.freshAttrs(src, r, start, n))
}

// vary changes one attribute of like: the protection, a flag, the file
// description (another one of the same file, or a dup of it), the file
// offset (no longer contiguous), or file against anonymous.
func (s *Shadow) vary(src Source, r int, like page, start, n int64) page {
	switch src.Intn(5, "vary") {
	case 0:
		p := engine.Pick(src, protPool, "prot")
		if p == like.prot {
			p ^= ops.ProtWrite
		}
		like.prot = p
	case 1:
		like.flags ^= engine.Pick(src, []ops.VMAMapFlags{ops.MapNoReserve, ops.MapShared, ops.MapStack, ops.MapLocked}, "flag")
	case 2:
		if like.file != 0 {
			like.file = s.sibling(src, like.file)
		} else {
			return s.freshAttrs(src, r, start, n)
		}
	case 3:
		if like.file != 0 {
			like.off += engine.Pick(src, []int64{1, -1, 4}, "offset shift")
		} else {
			like.prot = engine.Pick(src, protPool, "prot")
		}
	default:
		if like.file != 0 {
			like.file, like.off = 0, 0
		} else if hs := s.bound(); len(hs) > 0 && r == window {
			like.file, like.off = engine.Pick(src, hs, "handle"), start
		}
	}
	return s.permitted(like)
}

// sibling draws another handle of h's file: a dup of the same description
// (which merges) or another description (which never does).
func (s *Shadow) sibling(src Source, h int) int {
	var out []int
	for _, o := range s.bound() {
		if o != h && s.handles[o].file == s.handles[h].file {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return h
	}
	return engine.Pick(src, out, "sibling")
}

// neighbour maps a few pages right next to a run (or a page away from it),
// mostly alike, sometimes differing in one attribute.
func (s *Shadow) neighbour(src Source, r int) ops.Op {
	run, ok := s.pickRun(src, r)
	if !ok {
		return s.mapAnywhere(src, r)
	}
	n := 1 + int64(src.Intn(4, "pages"))
	gap := int64(0)
	if oneIn(src, 5, "a page away?") {
		gap = 1
	}
	right := src.Intn(2, "side") == 0
	if right && run.end+gap >= limit(r) || !right && run.start-gap < 1 {
		right = !right
	}
	var start int64
	var like page
	if right {
		start, like = run.end+gap, s.at(r, run.end-1)
		like.off += 1 + gap
	} else {
		n = min(n, run.start-gap)
		start, like = run.start-gap-n, s.at(r, run.start)
		like.off -= n + gap
	}
	if start < 0 || start >= limit(r) {
		return s.mapAnywhere(src, r)
	}
	if oneIn(src, 3, "differ?") {
		like = s.vary(src, r, like, start, n)
	}
	return s.mapping(src, r, start, n, like)
}

// fill maps a hole exactly (or the part of a long one next to a mapping),
// like the mapping on its left or on its right.
func (s *Shadow) fill(src Source, r int) ops.Op {
	holes := s.holes(r, s.hot[r])
	if len(holes) == 0 {
		return s.neighbour(src, r)
	}
	h := engine.Pick(src, holes, "hole")
	left, right := s.at(r, h.start-1), s.at(r, h.end)
	if h.pages() > 8 {
		if left.mapped {
			h.end = h.start + 1 + int64(src.Intn(4, "pages"))
		} else {
			h.start = h.end - 1 - int64(src.Intn(4, "pages"))
		}
	}
	like := left
	like.off++
	if !left.mapped || right.mapped && src.Intn(3, "like the right?") == 2 {
		like = right
		like.off -= h.pages()
	}
	if oneIn(src, 4, "differ?") {
		like = s.vary(src, r, like, h.start, h.pages())
	}
	return s.mapping(src, r, h.start, h.pages(), like)
}

// over maps a range over part of a run and beyond (MAP_FIXED replaces what
// was there), like the run's left neighbour or fresh.
func (s *Shadow) over(src Source, r int) ops.Op {
	run, ok := s.pickRun(src, r)
	if !ok {
		return s.mapAnywhere(src, r)
	}
	start, n := partOf(src, run)
	like := s.at(r, start-1)
	like.off++
	if !like.mapped || oneIn(src, 3, "fresh?") {
		like = s.freshAttrs(src, r, start, n)
	}
	return s.mapping(src, r, start, n, like)
}

// neighbourProt draws the protection of a page next to [start, start+n)
// (a change to it may merge), or any protection.
func (s *Shadow) neighbourProt(src Source, r int, start, n int64) ops.VMAProt {
	for _, p := range []int64{start - 1, start + n} {
		if pg := s.at(r, p); pg.mapped && src.Intn(3, "like a neighbour?") != 2 {
			return pg.prot
		}
	}
	return engine.Pick(src, protPool, "prot")
}

func (s *Shadow) protect(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	prot := s.neighbourProt(src, r, start, n)
	if pg := s.at(r, start); pg.file != 0 && pg.flags&ops.MapShared != 0 && s.handles[pg.file].readOnly && !oneIn(src, 4, "EACCES?") {
		prot &^= ops.ProtWrite
	}
	s.each(r, start, n, func(p *page) { p.prot = prot })
	return protectOp(r, start, n, prot)
}

// touch reads or writes a page: mostly a mapped one, mostly a write (which
// gives a private mapping its anon_vma).
func (s *Shadow) touch(src Source, r int) ops.Op {
	readOnly := oneIn(src, 4, "read-only pages too?")
	var mapped []int64
	for p := int64(0); p < limit(r); p++ {
		if pg := s.pages[r][p]; pg.mapped && (pg.prot&ops.ProtWrite != 0 || readOnly) {
			mapped = append(mapped, p)
		}
	}
	p := s.pickPoint(src, r)
	if len(mapped) > 0 && !oneIn(src, 8, "anywhere?") {
		p = engine.Pick(src, mapped, "page")
	}
	write := !oneIn(src, 4, "read?")
	if write {
		s.doWrite(r, p)
	}
	return touchOp(r, p, write)
}

// adviceFamilies are the flag-changing advices, each with the advice that
// undoes it.
var adviceFamilies = [][2]ops.VMAAdvice{
	{ops.AdviceDontDump, ops.AdviceDoDump},
	{ops.AdviceRandom, ops.AdviceNormal},
	{ops.AdviceSequential, ops.AdviceNormal},
	{ops.AdviceDontFork, ops.AdviceDoFork},
	{ops.AdviceHugePage, ops.AdviceNoHugePage},
	{ops.AdviceWipeOnFork, ops.AdviceKeepOnFork},
	{ops.AdviceMergeable, ops.AdviceUnmergeable},
}

// advise sets a flag-changing advice on a range, undoes one set before (on
// the same range or part of it), copies a neighbour's, or gives an advice
// that changes no flag (dontneed, the guard advices: gu is sticky).
func (s *Shadow) advise(src Source, r int) ops.Op {
	if r == thp && oneIn(src, 3, "a page advice on a whole half?") {
		// All of a PMD: a huge page there is aged or reclaimed whole
		// (madvise_cold_or_pageout_pte_range's huge-PMD branch), not
		// split first.
		half := engine.Pick(src, []int64{0, thpUnits / 2}, "half")
		return adviseOp(r, half, thpUnits/2, engine.Pick(src, []ops.VMAAdvice{ops.AdviceCold, ops.AdvicePageOut, ops.AdviceFree}, "advice"))
	}
	start, n := s.pickRange(src, r)
	switch src.Intn(4, "advise how") {
	case 0, 1:
		fam := src.Intn(len(adviceFamilies), "advice")
		s.each(r, start, n, func(p *page) { p.advice |= 1 << fam })
		return adviseOp(r, start, n, adviceFamilies[fam][0])
	case 2:
		if fam, ok := s.adviceAround(r, start, n); ok {
			undo := src.Intn(2, "undo or copy") == 0
			s.each(r, start, n, func(p *page) {
				if undo {
					p.advice &^= 1 << fam
				} else {
					p.advice |= 1 << fam
				}
			})
			if undo {
				return adviseOp(r, start, n, adviceFamilies[fam][1])
			}
			return adviseOp(r, start, n, adviceFamilies[fam][0])
		}
	}
	adv := engine.Pick(src, []ops.VMAAdvice{ops.AdviceDontNeed, ops.AdviceGuardInstall, ops.AdviceGuardRemove, ops.AdviceGuardInstall,
		ops.AdviceWillNeed, ops.AdviceCold, ops.AdvicePageOut, ops.AdviceFree, ops.AdviceDontNeedLocked, ops.AdviceRemove,
		ops.AdvicePopulateRead, ops.AdvicePopulateWrite}, "advice")
	if adv == ops.AdvicePopulateWrite {
		for p := start; p < start+n; p++ {
			s.doWrite(r, p)
		}
	}
	return adviseOp(r, start, n, adv)
}

// adviceAround returns an advice family set on a page in or next to
// [start, start+n).
func (s *Shadow) adviceAround(r int, start, n int64) (int, bool) {
	for p := start - 1; p <= start+n; p++ {
		if a := s.at(r, p).advice; a != 0 {
			for fam := range adviceFamilies {
				if a&(1<<fam) != 0 {
					return fam, true
				}
			}
		}
	}
	return 0, false
}

func (s *Shadow) lock(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	onFault := oneIn(src, 3, "onfault")
	var lim int64 = -1
	if oneIn(src, 3, "memlock first?") {
		lim = s.pickLimit(src, r, start, n)
	}
	s.each(r, start, n, func(p *page) {
		p.locked = true
		if !onFault && p.prot&ops.ProtWrite != 0 && p.flags&ops.MapShared == 0 {
			p.written = true
		}
	})
	if lim >= 0 {
		// The lock meets the limit, and one time in two the growth of
		// what it locked does too.
		s.limited = true
		s.pending = append(s.pending, lockOp(r, start, n, onFault))
		if start+n < limit(r) && src.Intn(2, "grow it after?") == 1 {
			s.pending = append(s.pending, remapOp(r, start, n, min(n+1+int64(src.Intn(2, "more")), limit(r)-start)))
		}
		return ops.Op{Kind: ops.KindMemlock, VMA: ops.VMAArgs{Limit: lim}}
	}
	return lockOp(r, start, n, onFault)
}

// pickLimit draws a limit of locked memory for a lock of [start,
// start+n) of r to meet: none at all (mlock is then EPERM), about what is
// locked already, at the edge where the lock just fits or just does not
// (the pages of the range locked already count once), or a small one.
func (s *Shadow) pickLimit(src Source, r int, start, n int64) int64 {
	var locked, inside int64
	for q := range s.pages {
		unit := int64(1)
		if q == thp {
			unit = thpUnit
		}
		for p, pg := range s.pages[q] {
			if pg.mapped && pg.locked {
				locked += unit
				if q == r && int64(p) >= start && int64(p) < start+n {
					inside += unit
				}
			}
		}
	}
	if r == thp {
		n *= thpUnit
	}
	fits := locked + n - inside
	limit := engine.Pick(src, []int64{fits, fits - 1, 0, locked, fits + 1, int64(src.Intn(17, "small limit"))}, "limit")
	return max(0, min(limit, ops.VMAMemlockMax))
}

func (s *Shadow) unlock(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	s.each(r, start, n, func(p *page) { p.locked = false })
	return rangeOp(ops.KindUnlock, r, start, n)
}

func (s *Shadow) unmap(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	if n > 3 && src.Intn(2, "punch?") == 0 {
		start, n = start+n/2, 1
	}
	s.doUnmap(r, start, n)
	return rangeOp(ops.KindUnmap, r, start, n)
}

// seal draws an mseal: mostly of a range of a run (split at its ends,
// merged with sealed neighbours), sometimes of one reaching a hole
// (ENOMEM, nothing sealed) or of nothing at all.
func (s *Shadow) seal(src Source, r int) ops.Op {
	start, n := s.pickRange(src, r)
	if oneIn(src, 8, "empty seal?") {
		n = 0
	}
	s.sealed = n > 0
	return ops.Op{Kind: ops.KindSeal, VMA: args(r, start, n)}
}
