package vma

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The merge core against the cases of tools/testing/vma (tests/merge.c,
// tests/mmap.c, tests/vma.c), ported to pages: the kernel's 0x1000 is page
// 1 here. Each runs on both layouts.

var rwFlags = VMRead | VMWrite | VMMayRead | VMMayWrite

func eachLayout(t *testing.T, f func(t *testing.T, s *Space)) {
	for _, c := range []struct {
		name string
		s    *Space
	}{{"slice", New(NewSlice(), Rules{Quirks: ops.VMAQuirksLinux618})}, {"tree", New(NewTree(), Rules{Quirks: ops.VMAQuirksLinux618})}} {
		t.Run(c.name, func(t *testing.T) { f(t, c.s) })
	}
}

// link puts a VMA in the layout (alloc_and_link_vma).
func (s *Space) link(start, end, pgoff int64, flags Flags) *VMA {
	v := &VMA{Start: start, End: end, Pgoff: pgoff, Flags: flags}
	s.layout.Insert(v)
	return v
}

// mergeNew is the tests' merge_new: find prev and next around the range.
func (s *Space) mergeNew(vmg *mergeState) *VMA {
	vmg.next = s.layout.Find(vmg.start)
	vmg.prev = s.layout.Before(vmg.start)
	return s.vmaMergeNewRange(vmg)
}

// tryMergeNewVMA merges a new range or links a new VMA (try_merge_new_vma).
func (s *Space) tryMergeNewVMA(start, end, pgoff int64, flags Flags) (*VMA, bool) {
	if v := s.mergeNew(&mergeState{start: start, end: end, pgoff: pgoff, flags: flags}); v != nil {
		return v, true
	}
	return s.link(start, end, pgoff, flags), false
}

func requireRange(t *testing.T, v *VMA, start, end, pgoff int64) {
	t.Helper()
	require.NotNil(t, v)
	require.Equal(t, [3]int64{start, end, pgoff}, [3]int64{v.Start, v.End, v.Pgoff})
}

// requireExistingMerged requires that vmaMergeExistingRange(vmg) merges
// into into, which then spans start to end at pgoff with the anon_vma
// anon.
func requireExistingMerged(t *testing.T, s *Space, vmg *mergeState, into *VMA, start, end, pgoff int64, anon *AnonVMA) {
	t.Helper()
	require.Same(t, into, s.vmaMergeExistingRange(vmg))
	requireRange(t, into, start, end, pgoff)
	require.Same(t, anon, into.Anon)
}

// requireStickyIf: if want, v kept the sticky flag (the kernel tests assert
// only that direction).
func requireStickyIf(t *testing.T, want bool, v *VMA) {
	t.Helper()
	if want {
		require.NotZero(t, v.Flags&VMMaybeGuard, "sticky flag lost")
	}
}

func TestSimpleMerge(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		s.link(0, 1, 0, rwFlags)
		s.link(2, 3, 2, rwFlags)
		v := s.mergeNew(&mergeState{start: 1, end: 2, pgoff: 1, flags: rwFlags})
		requireRange(t, v, 0, 3, 0)
		require.Equal(t, rwFlags, v.Flags)
		require.Equal(t, 1, s.layout.Len())
	})
}

func TestSimpleModify(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		init := s.link(0, 3, 0, rwFlags)
		flags := rwFlags
		v := s.vmaModifyFlags(init, init, 1, 2, &flags)
		require.Same(t, init, v)
		requireRange(t, v, 1, 2, 1)
		all := s.layout.All()
		require.Len(t, all, 3)
		requireRange(t, all[0], 0, 1, 0)
		requireRange(t, all[1], 1, 2, 1)
		requireRange(t, all[2], 2, 3, 2)
	})
}

func TestSimpleExpand(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		v := s.link(0, 1, 0, rwFlags)
		s.vmaExpand(&mergeState{target: v, start: 0, end: 3, pgoff: 0})
		requireRange(t, v, 0, 3, 0)
	})
}

// vma_shrink has no syscall of its own; munmap of the tail does it.
func TestSimpleShrink(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		s.link(0, 3, 0, rwFlags)
		s.vmsGatherMunmapVMAs(1, 3)
		all := s.layout.All()
		require.Len(t, all, 1)
		requireRange(t, all[0], 0, 1, 0)
	})
}

func TestMergeNew(t *testing.T) {
	for i := range 16 {
		sticky, aSticky, bSticky, cSticky := i&1 != 0, i&2 != 0, i&4 != 0, i&8 != 0
		eachLayout(t, func(t *testing.T, s *Space) { testMergeNew(t, s, sticky, aSticky, bSticky, cSticky) })
	}
}

func testMergeNew(t *testing.T, s *Space, sticky, aSticky, bSticky, cSticky bool) {
	flags := rwFlags
	if sticky {
		flags |= VMMaybeGuard
	}
	with := func(on bool) Flags {
		if on {
			return flags | VMMaybeGuard
		}
		return flags
	}
	anon := &AnonVMA{ID: 1}
	// AA B       CC
	a := s.link(0, 2, 0, with(aSticky))
	b := s.link(3, 4, 3, with(bSticky))
	c := s.link(0xb, 0xc, 0xb, with(cSticky))
	// No merge: AA B   **  CC
	d, merged := s.tryMergeNewVMA(7, 9, 7, flags)
	require.False(t, merged)
	require.Equal(t, 4, s.layout.Len())
	// mergesInto requires the new range start to end to merge into into,
	// which then spans from to to.
	mergesInto := func(start, end int64, into *VMA, from, to int64) *VMA {
		t.Helper()
		v, merged := s.tryMergeNewVMA(start, end, start, flags)
		require.True(t, merged)
		require.Same(t, into, v)
		requireRange(t, v, from, to, from)
		return v
	}
	// Merge both sides (A has a close hook, which changes nothing here).
	a.CloseHook = true
	b.Anon = anon
	v := mergesInto(2, 3, a, 0, 4)
	require.Same(t, anon, v.Anon)
	require.Equal(t, 3, s.layout.Len())
	requireStickyIf(t, sticky || aSticky || bSticky, v)
	// Merge to the previous VMA.
	v = mergesInto(4, 5, a, 0, 5)
	requireStickyIf(t, sticky || aSticky, v)
	// Merge to the next VMA: D is prepended.
	d.Anon, d.CloseHook = anon, true
	v = mergesInto(6, 7, d, 6, 9)
	requireStickyIf(t, sticky, v)
	// Both sides: A grows over D.
	d.CloseHook = false
	mergesInto(5, 6, a, 0, 9)
	require.Equal(t, 2, s.layout.Len())
	// Next: C is prepended.
	c.Anon = anon
	v = mergesInto(0xa, 0xb, c, 0xa, 0xc)
	requireStickyIf(t, sticky || cSticky, v)
	// Both sides: one VMA is left.
	v = mergesInto(9, 0xa, a, 0, 0xc)
	require.Same(t, anon, v.Anon)
	require.Equal(t, 1, s.layout.Len())
	requireStickyIf(t, sticky || aSticky || cSticky, v)
}

func TestVMAMergeSpecialFlags(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		left := s.link(0, 3, 0, rwFlags)
		for _, special := range []Flags{VMIO, VMDontExpand, VMPfnMap, VMMixedMap} {
			left.Flags = rwFlags | special
			require.Nil(t, s.mergeNew(&mergeState{start: 3, end: 4, pgoff: 3, flags: rwFlags | special}))
		}
		v := s.link(3, 4, 3, rwFlags)
		for _, special := range []Flags{VMIO, VMDontExpand, VMPfnMap, VMMixedMap} {
			left.Flags = rwFlags | special
			require.Nil(t, s.vmaMergeExistingRange(&mergeState{prev: left, middle: v, start: 3, end: 4, pgoff: 3, flags: rwFlags | special}))
		}
	})
}

func TestVMAMergeWithClose(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		// PPP**NNNN -> PPPPPNNNN: next has a close hook, prev only.
		prev := s.link(0, 3, 0, rwFlags)
		next := s.link(5, 9, 5, rwFlags)
		next.CloseHook = true
		v := s.mergeNew(&mergeState{start: 3, end: 5, pgoff: 3, flags: rwFlags})
		require.Same(t, prev, v)
		requireRange(t, v, 0, 5, 0)
		require.Equal(t, 2, s.layout.Len())
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// PPPVV: the middle has a close hook and would be deleted: no merge.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 5, 3, rwFlags)
		v.CloseHook = true
		require.Nil(t, s.vmaMergeExistingRange(&mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags}))
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// VVNNNN: likewise merging with next.
		v := s.link(3, 5, 3, rwFlags)
		s.link(5, 9, 5, rwFlags)
		v.CloseHook = true
		require.Nil(t, s.vmaMergeExistingRange(&mergeState{middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags}))
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// PPPVVNNNN with a close hook on the middle: no merge.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 5, 3, rwFlags)
		s.link(5, 9, 5, rwFlags)
		v.CloseHook = true
		require.Nil(t, s.vmaMergeExistingRange(&mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags}))
		require.Equal(t, 3, s.layout.Len())
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// PPPVVNNNN with a close hook on next: prev and middle only.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 5, 3, rwFlags)
		next := s.link(5, 9, 5, rwFlags)
		next.CloseHook = true
		require.Same(t, prev, s.vmaMergeExistingRange(&mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags}))
		requireRange(t, prev, 0, 5, 0)
		require.Equal(t, 2, s.layout.Len())
	})
}

func TestVMAMergeNewWithClose(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		prev := s.link(0, 2, 0, rwFlags)
		next := s.link(5, 7, 5, rwFlags)
		prev.CloseHook, next.CloseHook = true, true
		v := s.mergeNew(&mergeState{start: 2, end: 5, pgoff: 2, flags: rwFlags})
		require.Same(t, prev, v)
		requireRange(t, v, 0, 5, 0)
		require.Equal(t, 2, s.layout.Len())
	})
}

func TestMergeExisting(t *testing.T) {
	for i := range 8 {
		p, m, n := i&1 != 0, i&2 != 0, i&4 != 0
		eachLayout(t, func(t *testing.T, s *Space) { testMergeExisting(t, s, p, m, n) })
	}
}

func testMergeExisting(t *testing.T, s *Space, prevSticky, middleSticky, nextSticky bool) {
	flags, prevFlags, nextFlags := rwFlags, rwFlags, rwFlags
	if prevSticky {
		prevFlags |= VMMaybeGuard
	}
	if middleSticky {
		flags |= VMMaybeGuard
	}
	if nextSticky {
		nextFlags |= VMMaybeGuard
	}
	anon := &AnonVMA{ID: 1}
	// merged requires vmg to merge into into, which then spans start to
	// end (at pgoff start) with anon; the middle's rest, if given, spans
	// rest[0] to rest[1]; n ranges are left, into sticky if sticky. It
	// clears the layout for the next case.
	merged := func(vmg *mergeState, into *VMA, start, end int64, n int, sticky bool, rest ...int64) {
		t.Helper()
		requireExistingMerged(t, s, vmg, into, start, end, start, anon)
		if rest != nil {
			requireRange(t, vmg.middle, rest[0], rest[1], rest[0])
		}
		require.Equal(t, n, s.layout.Len())
		requireStickyIf(t, sticky, into)
		s.layout.Clear()
	}

	// Merge right, partial span:   VVVVNNN -> VNNNNNN.
	v := s.link(2, 6, 2, flags)
	v.Anon, v.CloseHook = anon, true
	next := s.link(6, 9, 6, nextFlags)
	next.CloseHook = true
	merged(&mergeState{prev: v, middle: v, start: 3, end: 6, pgoff: 3, flags: flags, anon: anon}, next, 3, 9, 2, middleSticky || nextSticky, 2, 3)

	// Merge right, full span: VVVVNNN -> NNNNNNN.
	v = s.link(2, 6, 2, flags)
	v.Anon = anon
	next = s.link(6, 9, 6, nextFlags)
	next.CloseHook = true
	merged(&mergeState{middle: v, start: 2, end: 6, pgoff: 2, flags: flags, anon: anon}, next, 2, 9, 1, middleSticky || nextSticky)

	// Merge left, partial span: PPPVVVV -> PPPPPPV.
	prev := s.link(0, 3, 0, prevFlags)
	prev.CloseHook = true
	v = s.link(3, 7, 3, flags)
	v.Anon, v.CloseHook = anon, true
	merged(&mergeState{prev: prev, middle: v, start: 3, end: 6, pgoff: 3, flags: flags, anon: anon}, prev, 0, 6, 2, prevSticky || middleSticky, 6, 7)

	// Merge left, full span: PPPVVVV -> PPPPPPP.
	prev = s.link(0, 3, 0, prevFlags)
	prev.CloseHook = true
	v = s.link(3, 7, 3, flags)
	v.Anon = anon
	merged(&mergeState{prev: prev, middle: v, start: 3, end: 7, pgoff: 3, flags: flags, anon: anon}, prev, 0, 7, 1, prevSticky || middleSticky)

	// Merge both: PPPVVVVNNN -> PPPPPPPPPP.
	prev = s.link(0, 3, 0, prevFlags)
	prev.CloseHook = true
	v = s.link(3, 7, 3, flags)
	v.Anon = anon
	s.link(7, 9, 7, nextFlags)
	merged(&mergeState{prev: prev, middle: v, start: 3, end: 7, pgoff: 3, flags: flags, anon: anon}, prev, 0, 9, 1, prevSticky || middleSticky || nextSticky)

	// Ranges neither at the left nor at the right of the middle never merge.
	s.link(0, 3, 0, prevFlags)
	v = s.link(3, 8, 3, flags)
	s.link(8, 0xa, 8, nextFlags)
	for _, r := range [][2]int64{{4, 5}, {5, 6}, {6, 7}, {4, 7}, {4, 6}, {5, 6}} {
		require.Nil(t, s.vmaMergeExistingRange(&mergeState{prev: v, middle: v, start: r[0], end: r[1], pgoff: r[0], flags: flags}))
	}
	require.Equal(t, 3, s.layout.Len())
}

func TestAnonVMANonMergeable(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		// Modified range between prev and next with different anon_vmas:
		// prev and middle merge, next stays (PPPVVVVNNN -> PPPPPPPNNN).
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 7, 3, rwFlags)
		next := s.link(7, 9, 7, rwFlags)
		prev.Anon, next.Anon = &AnonVMA{ID: 1}, &AnonVMA{ID: 2}
		require.Same(t, prev, s.vmaMergeExistingRange(&mergeState{prev: prev, middle: v, start: 3, end: 7, pgoff: 3, flags: rwFlags}))
		requireRange(t, prev, 0, 7, 0)
		requireRange(t, next, 7, 9, 7)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// The same for a new range in the gap (PPP****NNN -> PPPPPPPNNN).
		prev := s.link(0, 3, 0, rwFlags)
		next := s.link(7, 9, 7, rwFlags)
		prev.Anon, next.Anon = &AnonVMA{ID: 1}, &AnonVMA{ID: 2}
		require.Same(t, prev, s.mergeNew(&mergeState{start: 3, end: 7, pgoff: 3, flags: rwFlags}))
		requireRange(t, prev, 0, 7, 0)
		requireRange(t, next, 7, 9, 7)
	})
}

func TestDupAnonVMA(t *testing.T) {
	anon := &AnonVMA{ID: 1}
	eachLayout(t, func(t *testing.T, s *Space) {
		// Expanding over next, which has an anon_vma, takes it.
		prev := s.link(0, 3, 0, rwFlags)
		next := s.link(3, 5, 3, rwFlags)
		next.Anon = anon
		s.vmaExpand(&mergeState{target: prev, next: next, start: 0, end: 5, pgoff: 0, flags: rwFlags})
		require.Same(t, anon, prev.Anon)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// Next has it; prev extends over middle and next.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 5, 3, rwFlags)
		next := s.link(5, 8, 5, rwFlags)
		next.Anon = anon
		requireExistingMerged(t, s, &mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags}, prev, 0, 8, 0, anon)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// The middle has it; prev extends over middle and next.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 5, 3, rwFlags)
		s.link(5, 8, 5, rwFlags)
		v.Anon = anon
		requireExistingMerged(t, s, &mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags, anon: anon}, prev, 0, 8, 0, anon)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// The middle has it; prev extends over part of it.
		prev := s.link(0, 3, 0, rwFlags)
		v := s.link(3, 8, 3, rwFlags)
		v.Anon = anon
		requireExistingMerged(t, s, &mergeState{prev: prev, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags, anon: anon}, prev, 0, 5, 0, anon)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// The middle has it; next extends down over part of it.
		v := s.link(0, 5, 0, rwFlags)
		next := s.link(5, 8, 5, rwFlags)
		v.Anon = anon
		requireExistingMerged(t, s, &mergeState{prev: v, middle: v, start: 3, end: 5, pgoff: 3, flags: rwFlags, anon: anon}, next, 3, 8, 3, anon)
	})
}

func TestMergeExtend(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		v := s.link(0, 1, 0, rwFlags)
		s.link(3, 4, 3, rwFlags)
		require.Same(t, v, s.vmaMergeExtend(v, 2))
		requireRange(t, v, 0, 4, 0)
		require.Equal(t, 1, s.layout.Len())
	})
}

// test_expand_only_mode: an unrelated VMA at [0,2), prev at [3,5); expand
// over [5,9) with pgoff 5 in just-expand mode: prev becomes [3,9) with
// pgoff 3, and the merge never walks back (the kernel checks the iterator
// stays at 3; here no walk at all is made).
func TestExpandOnlyMode(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		s.link(0, 2, 0, rwFlags)
		prev := s.link(3, 5, 3, rwFlags)
		before := s.layout.Counts()
		v := s.vmaMergeNewRange(&mergeState{prev: prev, start: 5, end: 9, pgoff: 5, flags: rwFlags, justExpand: true})
		require.Same(t, prev, v)
		requireRange(t, v, 3, 9, 3)
		after := s.layout.Counts()
		require.Equal(t, int64(1), after.Walks-before.Walks, "only the store of the expanded VMA")
	})
}

func TestCopyVMA(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		// Move backwards and do not merge.
		v := s.link(3, 5, 3, rwFlags)
		nv := s.copyVMA(v, 0, 2, 0, false)
		require.NotSame(t, v, nv)
		requireRange(t, nv, 0, 2, 0)
	})
	eachLayout(t, func(t *testing.T, s *Space) {
		// Move next to another VMA and merge with it (a faulted source
		// keeps its pgoff, so the kernel test's pgoff 4 is given as is).
		v := s.link(0, 2, 0, rwFlags)
		v.Anon = &AnonVMA{ID: 1}
		next := s.link(6, 8, 6, rwFlags)
		require.Same(t, next, s.copyVMA(v, 4, 2, 4, false))
		requireRange(t, next, 4, 8, 4)
		require.Same(t, v.Anon, next.Anon)
	})
}

func TestMmapRegionBasic(t *testing.T) {
	eachLayout(t, func(t *testing.T, s *Space) {
		s.mmapRegion(nil, 0x300, 0x303, rwFlags, 0x300)
		s.mmapRegion(nil, 0x250, 0x253, rwFlags, 0x250)
		s.mmapRegion(nil, 0x303, 0x306, rwFlags, 0x303)
		s.mmapRegion(nil, 0x24d, 0x250, rwFlags, 0x24d)
		all := s.layout.All()
		require.Len(t, all, 2)
		requireRange(t, all[0], 0x24d, 0x253, 0x24d)
		requireRange(t, all[1], 0x300, 0x306, 0x300)
	})
}

func TestMmapRegionFillHole(t *testing.T) {
	for _, merge := range []bool{true, false} {
		eachLayout(t, func(t *testing.T, s *Space) {
			flags := rwFlags | VMMayExec
			hole := flags
			if !merge {
				hole |= VMExec
			}
			s.mmapRegion(nil, 0x300, 0x303, flags, 0x300)
			s.mmapRegion(nil, 0x306, 0x309, flags, 0x306)
			require.Nil(t, s.vmaLookup(0x303))
			s.mmapRegion(nil, 0x303, 0x306, hole, 0x303)
			all := s.layout.All()
			if merge {
				require.Len(t, all, 1)
				requireRange(t, all[0], 0x300, 0x309, 0x300)
				return
			}
			require.Len(t, all, 3)
			for i, v := range all {
				requireRange(t, v, 0x300+3*int64(i), 0x303+3*int64(i), 0x300+3*int64(i))
				require.Equal(t, i == 1, v.Flags&VMExec != 0)
			}
		})
	}
}

func TestFlagBits(t *testing.T) {
	require.Len(t, ops.VMAFlagNames, smapsFlagBits)
	for name, f := range map[string]Flags{
		"mr": VMMayRead, "mw": VMMayWrite, "me": VMMayExec, "ms": VMMayShare, "gd": VMGrowsDown,
		"pf": VMPfnMap, "gu": VMMaybeGuard, "lo": VMLocked, "io": VMIO, "sr": VMSeqRead, "rr": VMRandRead,
		"dc": VMDontCopy, "de": VMDontExpand, "ac": VMAccount, "nr": VMNoReserve, "ht": VMHugeTLB,
		"wf": VMWipeOnFork, "dd": VMDontDump, "mm": VMMixedMap, "hg": VMHugePage, "nh": VMNoHugePage,
		"mg": VMMergeable, "sl": VMSealed, "lf": VMLockOnFault, "dp": VMDroppable,
	} {
		bit, ok := ops.VMAFlag(name)
		require.True(t, ok, name)
		require.Equal(t, Flags(bit), f, name)
	}
}
