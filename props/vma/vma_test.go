package vma_test

import (
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/vma"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var sub = vma.Subsystem

// The checks every subsystem has (sidestest.Suite).
func TestSuite(t *testing.T) {
	start := func() (ops.Model, error) { return sidestest.Model(t, "optimized"), nil }
	sidestest.Suite{Sub: sub, RoundTrip: start}.Run(t)
}

// Every operation the generator draws, from every source (rapid, gopter,
// fuzz bytes), passes ops.Validate: its ranges stay inside the regions.
func TestDrawnOperationsAreValid(t *testing.T) {
	sources := map[string]func(seed uint64) []ops.Op{
		"rapid":  sub.RapidScripts(equiv.Exact),
		"gopter": sub.GopterScripts(equiv.Exact),
		"fuzz": func(seed uint64) []ops.Op {
			data := make([]byte, 64+seed%200)
			for i := range data {
				data[i] = byte(seed*2654435761>>(i%24) + uint64(i)*31)
			}
			return sub.DrawFuzz(&engine.ByteSource{Data: data})
		},
	}
	for name, gen := range sources {
		for seed := uint64(0); seed < 500; seed++ {
			for i, op := range gen(seed) {
				require.NoError(t, ops.Validate(op), "%s seed %d op %d: %s", name, seed, i+1, ops.FormatOp(op))
			}
		}
	}
}

// A copy of a shadow (gopter keeps one per state) is independent of the
// original: both draw the same operations from the same choices, whatever
// the other did meanwhile.
func TestShadowCopyIsIndependent(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		src := func(s int64) engine.Source { return engine.RandSource{Rng: rand.New(rand.NewSource(s))} }
		orig := vma.NewShadow(src(seed))
		warm := src(seed + 1000)
		for range 25 {
			orig.Step(warm)
		}
		dup := orig.Copy()
		var fromCopy, fromOrig []string
		a, b := src(seed+2000), src(seed+2000)
		for range 40 {
			fromCopy = append(fromCopy, ops.FormatOp(dup.Step(a)))
		}
		for range 40 {
			fromOrig = append(fromOrig, ops.FormatOp(orig.Step(b)))
		}
		require.Equal(t, fromCopy, fromOrig, "seed %d", seed)
	}
}

// The invariants hold of what the implementations give and refuse states
// that break them.
func TestInvariants(t *testing.T) {
	good, err := ops.ParseVMAState("brk=2\nw:0-2 rw-p anon mr,mw,me,ac\nw:2-4 r--s f1+3 mr,me,ms\nw:9-10 ---p anon mr,mw,me,lo,lf\nh:0-2 rw-p anon [heap] mr,mw,me,ac\n")
	require.NoError(t, err)
	require.NoError(t, vma.CheckInvariants(ops.Snapshot{VMA: good}))
	for _, bad := range []string{
		"brk=33\n",
		"brk=0\nh:0-2 rw-p anon mr,mw,me,ac\nw:0-2 rw-p anon mr,mw,me,ac\n",
		"brk=0\nw:0-3 rw-p anon mr,mw,me,ac\nw:2-4 rw-p anon mr,mw,me,ac\n",
		"brk=0\nw:4-4 rw-p anon mr,mw,me,ac\n",
		"brk=0\nw:60-65 rw-p anon mr,mw,me,ac\n",
		"brk=0\nw:0-1 rw-s f1+0 mr,mw,me\n",
		"brk=0\nw:0-1 rw-p anon mr,me,ac\n",
		"brk=0\nw:0-1 rw-p anon mr,mw,me,ac,hg,nh\n",
		"brk=0\nw:0-1 rw-p anon mr,mw,me,ac,lf\n",
		"brk=0\nw:0-1 rw-p anon [heap] mr,mw,me,ac\n",
		"brk=0\nw:0-1 rw-p anon+3 mr,mw,me,ac\n",
	} {
		st, err := ops.ParseVMAState(bad)
		require.NoError(t, err, bad)
		require.Error(t, vma.CheckInvariants(ops.Snapshot{VMA: st}), bad)
	}
}

// FuzzVMA turns the fuzzer's bytes into a script (one byte a choice) and
// compares the implementations IPCFUZZ_IMPLS names (naive, optimized and,
// where it can run, the live kernel by default) each with the next.
func FuzzVMA(f *testing.F) {
	sub.Fuzz(f, sidestest.FromEnv(f, sub))
}

// The generator must make what the subsystem is about: merges of every
// kind (a new range with prev, next or both, file mappings too; an
// existing range changed by mprotect, madvise or mlock with prev, next or
// both; brk expanding; an mremap growing into next; a move merging at its
// target), merges refused by state maps does not show (anon_vma, anonymous
// pgoff), splits, and every errno a script can get (EBADF cannot be: a
// script may use only handles bound before, and binding never fails).
func TestGeneratorReaches(t *testing.T) {
	m := sidestest.Model(t, "optimized")
	gen := sub.RapidScripts(equiv.Exact)
	const n = 600
	scripts := map[string]int{}
	for seed := uint64(0); seed < n; seed++ {
		seen := map[string]bool{}
		require.NoError(t, m.Reset(ops.Config{}))
		before := ops.VMAState{}
		forked := false
		for _, op := range gen(seed) {
			r, err := m.Apply(op)
			require.NoError(t, err)
			snap, err := m.Snapshot()
			require.NoError(t, err)
			for _, what := range classify(op, r, before, snap.VMA) {
				seen[what] = true
				if forked && strings.HasSuffix(what, "refused by hidden state") {
					seen["refused by hidden state after a fork"] = true
				}
			}
			if op.Kind == ops.KindFork {
				forked = true
				seen["fork"] = true
				if len(snap.VMA.VMAs) < len(before.VMAs) {
					seen["fork leaves a dontfork VMA out"] = true
				}
			}
			before = snap.VMA
		}
		for what := range seen {
			scripts[what]++
		}
	}
	var names []string
	for what := range scripts {
		names = append(names, what)
	}
	sort.Strings(names)
	for _, what := range names {
		t.Logf("%4d of %d scripts: %s", scripts[what], n, what)
	}
	for _, what := range []string{
		"map merges with prev", "map merges with next", "map merges with both", "map merges a file mapping", "map refused by hidden state",
		"modify merges with prev", "modify merges with next", "modify merges with both", "split", "split in three",
		"brk expands", "brk makes a VMA", "remap grows into next", "move merges with prev", "move merges with next",
		"move merges with both", "move refused by hidden state",
		"EINVAL", "ENOMEM", "EFAULT", "EACCES", "EPERM",
		"fork", "fork leaves a dontfork VMA out", "refused by hidden state after a fork",
	} {
		require.GreaterOrEqual(t, scripts[what], 3, "only %d scripts of %d reached %q", scripts[what], n, what)
	}
}

// classify names what an operation did, from the states before and after.
func classify(op ops.Op, r ops.Result, before, after ops.VMAState) []string {
	errno := r.Err
	if errno != ops.OK {
		out := []string{errno.String()}
		if errno == ops.ENOMEM && op.Kind == ops.KindProtect {
			out = append(out, modified(op.VMA, before, after)...)
		}
		return out
	}
	a := op.VMA
	switch op.Kind {
	case ops.KindMap:
		return merged("map", a.Heap, a.Start, a.Start+a.Pages, after)
	case ops.KindProtect, ops.KindAdvise, ops.KindLock, ops.KindUnlock:
		return modified(a, before, after)
	case ops.KindBrk:
		return brkDid(before, after)
	case ops.KindRemap:
		switch {
		case a.Fixed:
			return merged("move", a.Heap, a.Target, a.Target+a.NewPages, after)
		case a.MayMove && r.ID != a.Start && r.ID >= 0: // moved where the kernel picked
			return merged("move", false, r.ID, r.ID+a.NewPages, after)
		case a.NewPages > a.Pages:
			if v, ok := containing(after, a.Heap, a.Start); ok && v.End > a.Start+a.NewPages {
				return []string{"remap grows into next"}
			}
		}
	}
	return nil
}

// containing returns the VMA of st holding page p of a region.
func containing(st ops.VMAState, heapArea bool, p int64) (ops.VMA, bool) {
	for _, v := range st.VMAs {
		if v.Heap == heapArea && v.Start <= p && p < v.End {
			return v, true
		}
	}
	return ops.VMA{}, false
}

// merged names what became of a new range [s, e): merged with the VMA
// before it, after it, both, or none although a neighbour shows the same
// attributes (the anon_vma or the anonymous pgoff refused it).
func merged(what string, heapArea bool, s, e int64, after ops.VMAState) []string {
	v, ok := containing(after, heapArea, s)
	if !ok {
		return nil
	}
	var out []string
	if v.File != 0 && (v.Start < s || v.End > e) {
		out = append(out, what+" merges a file mapping")
	}
	switch {
	case v.Start < s && v.End > e:
		return append(out, what+" merges with both")
	case v.Start < s:
		return append(out, what+" merges with prev")
	case v.End > e:
		return append(out, what+" merges with next")
	}
	for _, w := range after.VMAs {
		if w.Heap == heapArea && (w.End == v.Start || w.Start == v.End) && looksMergeable(w, v) {
			return []string{what + " refused by hidden state"}
		}
	}
	return nil
}

// looksMergeable: a and b, adjacent, show the same attributes, and a file
// offset that would be contiguous.
func looksMergeable(a, b ops.VMA) bool {
	if a.Start > b.Start {
		a, b = b, a
	}
	gu, _ := ops.VMAFlag("gu")
	return a.Perms == b.Perms && a.File == b.File && a.Shm == 0 && b.Shm == 0 && a.Pkey == b.Pkey &&
		a.Flags&^gu == b.Flags&^gu && (a.File == 0 || b.Offset == a.Offset+a.End-a.Start)
}

// boundaries returns the pages of a region where one VMA ends and the next
// begins, and the pages strictly inside a VMA.
func boundaries(st ops.VMAState, heapArea bool) (between, inside map[int64]bool) {
	between, inside = map[int64]bool{}, map[int64]bool{}
	ends := map[int64]bool{}
	for _, v := range st.VMAs {
		if v.Heap != heapArea {
			continue
		}
		ends[v.End] = true
		for p := v.Start + 1; p < v.End; p++ {
			inside[p] = true
		}
	}
	for _, v := range st.VMAs {
		if v.Heap == heapArea && ends[v.Start] {
			between[v.Start] = true
		}
	}
	return between, inside
}

// modified names what a change of [start, start+pages) did to the VMA
// boundaries at its ends: a boundary between two VMAs gone (a merge with
// prev at the start, with next at the end), a VMA cut (a split).
func modified(a ops.VMAArgs, before, after ops.VMAState) []string {
	s, e := a.Start, a.Start+a.Pages
	bb, bi := boundaries(before, a.Heap)
	ab, ai := boundaries(after, a.Heap)
	var out []string
	left, right := bb[s] && ai[s], bb[e] && ai[e]
	switch {
	case left && right:
		out = append(out, "modify merges with both")
	case left:
		out = append(out, "modify merges with prev")
	case right:
		out = append(out, "modify merges with next")
	}
	cutS, cutE := bi[s] && ab[s], bi[e] && ab[e]
	if cutS || cutE {
		out = append(out, "split")
	}
	if cutS && cutE {
		if v, ok := containing(before, a.Heap, s); ok && v.End > e {
			out = append(out, "split in three")
		}
	}
	return out
}

// brkDid names what a successful brk did to the heap: the VMA ending at the
// old break grew, or a VMA of its own came.
func brkDid(before, after ops.VMAState) []string {
	if after.Brk <= before.Brk {
		return nil
	}
	v, ok := containing(after, true, after.Brk-1)
	switch {
	case !ok:
		return nil
	case v.Start < before.Brk:
		return []string{"brk expands"}
	}
	return []string{"brk makes a VMA"}
}
