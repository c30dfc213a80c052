package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Indices of adviceFamilies the shadow reads at a fork.
const (
	famDontFork   = 3
	famWipeOnFork = 5
	famHugePage   = 4
)

// forkStep draws a fork, one time in three after advising part of a
// mapping dontfork (which the child then lacks); with a move to undo, one
// time in two it undoes the move first (a fork in between would keep the
// move from merging back: the moved pages are fork children).
func (s *Shadow) forkStep(src Source) ops.Op {
	if len(s.moves) > 0 && src.Intn(2, "move back before the fork?") == 1 {
		return s.moveBack(src)
	}
	if run, ok := s.pickRun(src, window); ok && oneIn(src, 3, "dontfork first?") {
		start, n := partOf(src, run)
		n = min(n, limit(window)-start)
		fam := int64(engine.Pick(src, []int{famDontFork, famWipeOnFork}, "advice before the fork"))
		s.each(window, start, n, func(p *page) { p.advice |= 1 << fam })
		s.pending = append(s.pending, s.fork())
		return adviseOp(window, start, n, adviceFamilies[fam][0])
	}
	return s.fork()
}

// fork draws a fork: the child's picture is the parent's without the
// pages advised dontfork, with the wipeonfork pages unwritten and nothing
// locked. Written pages stay written: in the child they are fork children,
// which the drawing after it keeps meeting with unwritten neighbours.
func (s *Shadow) fork() ops.Op {
	for r := range s.pages {
		for p := range s.pages[r] {
			pg := &s.pages[r][p]
			switch {
			case !pg.mapped:
			case pg.advice&(1<<famDontFork) != 0:
				*pg = page{}
			case pg.advice&(1<<famWipeOnFork) != 0:
				pg.written = false
			}
			pg.locked = false
		}
	}
	return ops.Op{Kind: ops.KindFork}
}
