package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// pair is two runs side by side whose pages differ in one attribute that
// mprotect, madvise or mlock can change.
type pair struct {
	left, right span
	diff        int
}

// The attribute a pair differs in.
const (
	diffProt = iota
	diffAdvice
	diffLock
)

// pairs lists the runs of r that touch and differ in one changeable
// attribute only.
func (s *Shadow) pairs(r int) []pair {
	var out []pair
	runs := s.runs(r, limit(r))
	for i := 1; i < len(runs); i++ {
		if runs[i-1].end != runs[i].start {
			continue
		}
		a, b := s.at(r, runs[i-1].end-1), s.at(r, runs[i].start)
		for _, d := range []int{diffProt, diffAdvice, diffLock} {
			if like(a, b, d) {
				out = append(out, pair{runs[i-1], runs[i], d})
			}
		}
	}
	return out
}

// like reports whether b would be alike a if attribute d were made equal.
func like(a, b page, d int) bool {
	switch d {
	case diffProt:
		b.prot = a.prot
	case diffAdvice:
		b.advice = a.advice
	default:
		b.locked = a.locked
	}
	return alike(a, b)
}

// restore changes one of two touching runs that differ in one attribute
// to match the other: all of it, or the part next to the other. This is
// what merges existing ranges (algorithm B), with prev, next or both.
func (s *Shadow) restore(src Source, r int) ops.Op {
	ps := s.pairs(r)
	if len(ps) == 0 {
		return s.protect(src, r)
	}
	p := engine.Pick(src, ps, "pair")
	from, to := p.left, p.right // change to so that it is like from
	if src.Intn(2, "which side") == 1 {
		from, to = to, from
	}
	model := s.at(r, from.start)
	start, n := to.start, to.pages()
	if k := 1 + int64(src.Intn(int(n), "part pages")); src.Intn(3, "part?") == 2 {
		n = k
		if to.start < from.start {
			start = to.end - k
		}
	}
	// Now and then the range reaches into the other run, which has the
	// attribute already: the call changes a part of one VMA and covers
	// the start (or end) of its neighbour, the case of mlock's and
	// mprotect's loops whose merge with next once used a stale end
	// (ci/kernels/bug-mlock-merge-next).
	if oneIn(src, 4, "reach into the other") {
		ext := 1 + int64(src.Intn(int(from.pages()), "reach pages"))
		if to.start < from.start {
			n += ext
		} else {
			start -= ext
			n += ext
		}
	}
	s.remember(r, start, start+n)
	switch p.diff {
	case diffProt:
		s.each(r, start, n, func(pg *page) { pg.prot = model.prot })
		return protectOp(r, start, n, model.prot)
	case diffLock:
		s.each(r, start, n, func(pg *page) { pg.locked = model.locked })
		if model.locked {
			return lockOp(r, start, n, false)
		}
		return rangeOp(ops.KindUnlock, r, start, n)
	}
	adv := s.at(r, to.start).advice
	for fam := range adviceFamilies {
		bit := uint16(1) << fam
		if (adv^model.advice)&bit != 0 {
			s.each(r, start, n, func(pg *page) { pg.advice = pg.advice&^bit | model.advice&bit })
			if model.advice&bit != 0 {
				return adviseOp(r, start, n, adviceFamilies[fam][0])
			}
			return adviseOp(r, start, n, adviceFamilies[fam][1])
		}
	}
	return protectOp(r, start, n, model.prot)
}
