// Package vma is the vma subsystem (one process's address space: mmap,
// munmap, mprotect, mremap, brk, madvise, mlock, page faults) as the
// drivers see it: its generator and its registry value, Subsystem.
//
// The generator keeps a page-level shadow of the window, the heap area and
// the THP area, there in units of 16 pages (what each page was mapped
// with, whether it was written, where it came from) and draws the neighbours that make merges interesting: mappings
// right next to others, alike or differing in one attribute (protection,
// a flag, the file description, a file offset that is not contiguous),
// holes filled exactly, sub-ranges at the edges and in the middle of
// mappings changed by mprotect, madvise and mlock and changed back,
// anonymous memory written (so that it has an anon_vma) or not, mremap
// growing, shrinking and moving (and moving back home), brk next to
// mappings of the heap area, and invalid requests on purpose. Each script
// draws its own swarm weights, and one script in two starts from a set-up
// (a mapping to cut up, written islands with a hole between them, ...).
// The shadow only steers; it is never an oracle.
package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Source is where the generator's choices come from.
type Source = engine.Source

// handle is what the shadow knows of a file handle.
type handle struct {
	bound bool
	// desc and file identify the open file description and the file.
	desc, file int
	readOnly   bool
}

// move is a fixed mremap the script made, which it may undo.
type move struct {
	region         int
	from, to, size int64
}

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	space
	swarm engine.Swarm
	// hot is, per region, the part most operations target: small enough
	// that mappings keep meeting their neighbours.
	hot     [3]int64
	handles [ops.VMAMaxHandles + 1]handle
	descs   int
	files   int
	moves   []move
	// edges are the ends of recent ranges, per region, which later ranges
	// start or end on.
	edges [3][]int64
	// huge: the script works in the THP area where it would in the
	// window, two times in three.
	huge bool
	// sealed: the script sealed something already; one seal a script is
	// enough (what it seals refuses most later changes).
	sealed bool
	// limited: a memlock ran; new mappings are locked more often, to meet
	// the limit.
	limited bool
	// pending are operations drawn ahead (a set-up), which Step hands out
	// first.
	pending []ops.Op
}

// NewShadow returns the shadow of an empty address space, with the
// script's swarm weights and hot parts drawn from src; one script in two
// starts with a set-up. One script in five works in the THP area too, and
// starts with a huge page there one time in two.
func NewShadow(src Source) *Shadow {
	s := &Shadow{swarm: engine.NewSwarm(src, int(numActions))}
	s.hot[window] = engine.Pick(src, []int64{16, 12, 24, 16, 40, ops.VMAWindowPages}, "hot window pages")
	s.hot[heap] = engine.Pick(src, []int64{12, 8, 20, ops.VMAHeapPages}, "hot heap pages")
	s.hot[thp] = thpUnits
	s.huge = oneIn(src, 5, "THP area?")
	switch {
	case s.huge && src.Intn(2, "a huge page first?") == 1:
		s.pending = s.hugeSetUp(src)
	case src.Intn(2, "set-up?") == 1:
		s.pending = s.setUp(src)
	}
	return s
}

type action uint8

const (
	actMap       action = iota // a mapping anywhere in the hot part
	actNeighbour               // a mapping right next to one, alike or not
	actFill                    // a mapping that fills a hole exactly
	actOver                    // a mapping over part of others (MAP_FIXED replaces)
	actProtect
	actRestore // a change that makes a mapping like the one next to it
	actTouch
	actAdvise
	actLock
	actUnlock
	actUnmap
	actGrow   // mremap growing in place
	actShrink // mremap shrinking
	actMove   // mremap to a fixed target
	actBack   // mremap a moved range back home
	actBrk
	actHeap   // a mapping or protection next to the break
	actFile   // open, reopen, dup
	actLayout // observe the layout: a step's merges are compared where they happen
	actSeal   // mseal of a range: what it seals refuses later changes
	actFork   // fork: the script carries on in the child
	actBad    // a deliberately invalid request
	numActions
)

// baseMenu holds every action always available; repeats are base weights.
var baseMenu = []action{
	actMap, actNeighbour, actNeighbour, actNeighbour, actFill, actOver,
	actProtect, actProtect, actRestore, actRestore, actRestore, actTouch, actTouch, actTouch,
	actAdvise, actAdvise, actLock, actUnlock, actUnmap,
	actGrow, actShrink, actMove, actMove, actMove, actBrk, actBrk, actBrk, actHeap, actFile, actLayout, actSeal, actBad, actBad,
	actGrow, actShrink, actMove, actMove, actBrk, actBrk, actBrk, actHeap, actFile, actLayout, actFork, actBad, actBad,
}

// Step draws one operation and advances the shadow by its expected effect.
func (s *Shadow) Step(src Source) ops.Op { return s.inPages(src, s.step(src)) }

// inPages turns an operation on the THP area from the shadow's units into
// pages: a touch lands on any page of its unit.
//
// Nothing drawn there reads a page in: where the kernel can map the huge
// zero page, a read fault gives the VMA an anon_vma first
// (do_huge_pmd_anonymous_page), which a read fault of a base page does not
// (it maps the zero page), and which page tables decide, not a layout: the
// models keep no page tables. So a touch there writes, a map of private
// memory without write populates and locks nothing, MADV_POPULATE_READ is
// MADV_POPULATE_WRITE (refused where the VMA cannot be written, before any
// fault), a lock of such memory
// is MLOCK_ONFAULT, and a locked range of it does not grow.
func (s *Shadow) inPages(src Source, op ops.Op) ops.Op {
	if !op.VMA.THP {
		return op
	}
	a := &op.VMA
	readIn := func(start, n int64) bool { // a page of the units is read in if populated
		for p := max(start, 0); p < min(start+max(n, 1), limit(thp)); p++ {
			if pg := s.pages[thp][p]; pg.mapped && pg.flags&ops.MapShared == 0 && pg.prot&ops.ProtWrite == 0 {
				return true
			}
		}
		return false
	}
	locked := func(p int64) bool { pg := s.at(thp, p); return pg.mapped && pg.locked }
	switch op.Kind {
	case ops.KindTouch:
		if !a.Write {
			a.Write = true
			s.doWrite(thp, a.Start)
		}
	case ops.KindMap:
		if a.Flags&ops.MapShared == 0 && a.Prot&ops.ProtWrite == 0 {
			a.Flags &^= ops.MapPopulate | ops.MapLocked
		}
	case ops.KindAdvise:
		if a.Advice == ops.AdvicePopulateRead {
			a.Advice = ops.AdvicePopulateWrite
		}
	case ops.KindLock:
		if readIn(a.Start, a.Pages) {
			a.OnFault = true
		}
	case ops.KindRemap:
		if a.NewPages > a.Pages && (locked(a.Start) && readIn(a.Start, 1) || a.Fixed && locked(a.Target) && readIn(a.Target, 1)) {
			a.NewPages = a.Pages
		}
	}
	a.Start, a.Pages, a.NewPages, a.Target = a.Start*thpUnit, a.Pages*thpUnit, a.NewPages*thpUnit, a.Target*thpUnit
	if op.Kind == ops.KindTouch {
		a.Start += int64(src.Intn(thpUnit, "page of the unit"))
	}
	return op
}

func (s *Shadow) step(src Source) ops.Op {
	if len(s.pending) > 0 {
		op := s.pending[0]
		s.pending = s.pending[1:]
		return op
	}
	menu := baseMenu
	if len(s.moves) > 0 {
		menu = append(menu[:len(menu):len(menu)], actBack, actBack, actBack)
	}
	if len(s.alikeGaps(window)) > 0 {
		menu = append(menu[:len(menu):len(menu)], actGrow, actGrow)
	}
	switch engine.Choose(src, s.swarm, menu) {
	case actMap:
		return s.mapAnywhere(src, s.region(src))
	case actNeighbour:
		return s.neighbour(src, s.region(src))
	case actFill:
		return s.fill(src, s.region(src))
	case actOver:
		return s.over(src, s.region(src))
	case actProtect:
		return s.protect(src, s.region(src))
	case actRestore:
		return s.restore(src, s.region(src))
	case actTouch:
		return s.touch(src, s.region(src))
	case actAdvise:
		return s.advise(src, s.region(src))
	case actLock:
		return s.lock(src, s.region(src))
	case actUnlock:
		return s.unlock(src, s.region(src))
	case actUnmap:
		return s.unmap(src, s.region(src))
	case actGrow:
		return s.grow(src, s.region(src))
	case actShrink:
		return s.shrink(src, s.region(src))
	case actMove:
		return s.moveAway(src, s.region(src))
	case actBack:
		return s.moveBack(src)
	case actBrk:
		return s.brkOp(src)
	case actHeap:
		return s.nearBreak(src)
	case actFile:
		return s.file(src)
	case actLayout:
		return ops.Op{Kind: ops.KindLayout}
	case actSeal:
		if s.sealed {
			return ops.Op{Kind: ops.KindLayout}
		}
		return s.seal(src, s.region(src))
	case actFork:
		return s.forkStep(src)
	}
	return s.bad(src)
}

// region draws the region of the next operation: mostly the window (or,
// two times in three, the THP area in a script that works there), the heap
// area one time in six.
func (s *Shadow) region(src Source) int {
	if src.Intn(6, "heap area?") == 5 {
		return heap
	}
	if s.huge && src.Intn(3, "THP area?") != 0 {
		return thp
	}
	return window
}

// oneIn is true about once in n draws; its plain (shrunk) value is false.
func oneIn(src Source, n int, label string) bool { return src.Intn(n, label) == n-1 }

// remember keeps the edges of a range for later ranges to meet.
func (s *Shadow) remember(r int, start, end int64) {
	s.edges[r] = append(s.edges[r], start, end)
	if len(s.edges[r]) > 12 {
		s.edges[r] = s.edges[r][2:]
	}
}

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow {
	c := *s
	c.moves = append([]move(nil), s.moves...)
	c.pending = append([]ops.Op(nil), s.pending...)
	for r := range s.edges {
		c.edges[r] = append([]int64(nil), s.edges[r]...)
	}
	return &c
}

// MaxLen is the longest script Draw makes.
const MaxLen = 60

// Subsystem is the vma subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "vma",
	Doc:        "one address space: mmap, munmap, mprotect, mremap, brk, madvise, mlock, faults; VMA merging",
	NewShadow:  func(src engine.Source, _ equiv.Relation) engine.Shadow { return NewShadow(src) },
	MinLen:     1,
	MaxLen:     MaxLen,
	FuzzMaxLen: 30,
	Invariant:  CheckInvariants,
	Relations:  []equiv.Relation{equiv.Exact},
}
