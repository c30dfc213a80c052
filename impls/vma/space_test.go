package vma

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/vma/vmatest"
)

// Builders of calls, in pages of the window unless said otherwise.
const (
	rw   = ops.ProtRead | ops.ProtWrite
	ro   = ops.ProtRead
	none = ops.VMAProt(0)
)

func mapAt(start, pages int64, prot ops.VMAProt) vmatest.Call {
	return vmatest.Call{Op: vmatest.Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot}}
}

func mapFile(start, pages int64, prot ops.VMAProt, h int, off int64, flags ops.VMAMapFlags) vmatest.Call {
	return vmatest.Call{Op: vmatest.Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot, File: h, Offset: off, Flags: flags}}
}

func mapFlags(start, pages int64, prot ops.VMAProt, flags ops.VMAMapFlags) vmatest.Call {
	return vmatest.Call{Op: vmatest.Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot, Flags: flags}}
}

func protect(start, pages int64, prot ops.VMAProt) vmatest.Call {
	return vmatest.Call{Op: vmatest.Protect, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot}}
}

func write(page int64) vmatest.Call {
	return vmatest.Call{Op: vmatest.Touch, Args: ops.VMAArgs{Start: page, Pages: 1, Write: true}}
}

func advise(start, pages int64, adv ops.VMAAdvice) vmatest.Call {
	return vmatest.Call{Op: vmatest.Advise, Args: ops.VMAArgs{Start: start, Pages: pages, Advice: adv}}
}

func remapFixed(start, pages, newPages, target int64) vmatest.Call {
	return vmatest.Call{Op: vmatest.Remap, Args: ops.VMAArgs{Start: start, Pages: pages, NewPages: newPages, Fixed: true, Target: target}}
}

func brk(b int64) vmatest.Call { return vmatest.Call{Op: vmatest.Brk, Args: ops.VMAArgs{Break: b}} }

func open(h int) vmatest.Call {
	return vmatest.Call{Op: vmatest.Open, File: ops.VMAFileArgs{Handle: h}}
}

func heap(c vmatest.Call) vmatest.Call {
	c.Args.Heap = true
	return c
}

// runBoth runs calls on the naive and the optimized space, checks they
// agree at every step, and returns the final state's text and the errnos.
func runBoth(t *testing.T, calls ...vmatest.Call) (string, []ops.Errno) {
	t.Helper()
	a, err := vmatest.Run(NewNaive(ops.VMAQuirksLinux618), calls)
	require.NoError(t, err)
	b, err := vmatest.Run(NewOptimized(ops.VMAQuirksLinux618), calls)
	require.NoError(t, err)
	if d := vmatest.Diff(calls, a, b, "naive", "optimized"); d != "" {
		t.Fatal(d)
	}
	var errs []ops.Errno
	for _, st := range a {
		errs = append(errs, st.Errno)
	}
	return ops.FormatVMAState(a[len(a)-1].State), errs
}

func state(brk int64, lines ...string) string {
	var b strings.Builder
	b.WriteString("brk=")
	b.WriteString(ops.FormatVMAState(ops.VMAState{Brk: brk})[4:])
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

const anonRW = "rw-p anon mr,mw,me,ac"

// The worked cases of vma-spec §5 and the anon_vma and VM_ACCOUNT rules of
// §2, through the syscalls.
func TestSpecCases(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls []vmatest.Call
		want  string
	}{
		{"S10 mmap next to a compatible prev extends it",
			[]vmatest.Call{mapAt(0, 2, rw), write(0), mapAt(2, 2, rw)},
			state(0, "w:0-4 "+anonRW)},
		{"S11 mmap before a compatible next extends it down",
			[]vmatest.Call{mapAt(2, 2, rw), write(2), mapAt(0, 2, rw)},
			state(0, "w:0-4 "+anonRW)},
		{"S13 mmap filling a hole merges all three",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(3, 2, rw), mapAt(2, 1, rw)},
			state(0, "w:0-5 "+anonRW)},
		{"S12 but prev and next have different anon_vmas: prev only",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(3, 2, rw), write(0), write(3), mapAt(2, 1, rw)},
			state(0, "w:0-3 "+anonRW, "w:3-5 "+anonRW)},
		{"S60 mprotect of a whole VMA between compatible ones: 3-way merge",
			[]vmatest.Call{mapAt(0, 6, rw), protect(2, 2, ro), protect(2, 2, rw)},
			state(0, "w:0-6 "+anonRW)},
		{"S45 the same with different anon_vmas around: left only",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(2, 2, ro), mapAt(4, 2, rw), write(0), write(4), protect(2, 2, rw)},
			state(0, "w:0-4 "+anonRW, "w:4-6 "+anonRW)},
		{"S46 mprotect of a left-edge sub-range: prev grows",
			[]vmatest.Call{mapAt(0, 2, ro), mapAt(2, 4, rw), protect(2, 2, ro)},
			state(0, "w:0-4 r--p anon mr,mw,me", "w:4-6 "+anonRW)},
		{"S47 mprotect of a right-edge sub-range: next grows down",
			[]vmatest.Call{mapAt(0, 4, rw), mapAt(4, 2, ro), protect(2, 2, ro)},
			state(0, "w:0-2 "+anonRW, "w:2-6 r--p anon mr,mw,me")},
		{"S48 left refused (different anon_vma), right allowed: merges right",
			[]vmatest.Call{mapAt(0, 2, rw), write(0), mapAt(3, 3, rw), write(3), protect(3, 1, ro), mapAt(2, 1, rw), protect(3, 1, rw)},
			state(0, "w:0-3 "+anonRW, "w:3-6 "+anonRW)},
		{"S01 mprotect of an interior sub-range: a 3-way split",
			[]vmatest.Call{mapAt(0, 6, rw), protect(2, 2, ro)},
			state(0, "w:0-2 "+anonRW, "w:2-4 r--p anon mr,mw,me", "w:4-6 "+anonRW)},
		{"S03 an unfaulted rw piece set back to none drops ac and re-merges",
			[]vmatest.Call{mapAt(0, 6, none), protect(2, 2, rw), protect(2, 2, none)},
			state(0, "w:0-6 ---p anon mr,mw,me")},
		{"S04 a faulted one keeps ac and stays apart",
			[]vmatest.Call{mapAt(0, 6, none), protect(2, 2, rw), write(2), protect(2, 2, none)},
			state(0, "w:0-2 ---p anon mr,mw,me", "w:2-4 ---p anon mr,mw,me,ac", "w:4-6 ---p anon mr,mw,me")},
		{"S14 a neighbour differing in protection only lends its anon_vma, so they merge later",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(2, 2, ro), protect(2, 2, rw), protect(2, 2, ro), write(0), protect(2, 2, rw), write(2), protect(0, 2, ro), protect(0, 2, rw)},
			state(0, "w:0-4 "+anonRW)},
		{"S15 one differing in dd does not",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(2, 2, rw), advise(2, 2, ops.AdviceDontDump), write(0), write(2), advise(2, 2, ops.AdviceDoDump)},
			state(0, "w:0-2 "+anonRW, "w:2-4 "+anonRW)},
		{"S32 a faulted VMA moved keeps its pgoff and does not merge at the new place",
			[]vmatest.Call{mapAt(0, 2, rw), write(0), mapAt(10, 2, rw), remapFixed(0, 2, 2, 8)},
			state(0, "w:8-10 "+anonRW, "w:10-12 "+anonRW)},
		{"S31 an unfaulted one takes the new address as pgoff and merges",
			[]vmatest.Call{mapAt(0, 2, rw), mapAt(10, 2, rw), remapFixed(0, 2, 2, 8)},
			state(0, "w:8-12 "+anonRW)},
		{"S53 moving the faulted one back home restores the match",
			[]vmatest.Call{mapAt(0, 4, rw), write(0), remapFixed(2, 2, 2, 10), remapFixed(10, 2, 2, 2)},
			state(0, "w:0-4 "+anonRW)},
		{"S54 guard install marks the whole VMA gu, which merges ignore and keep",
			[]vmatest.Call{mapAt(0, 2, rw), advise(0, 1, ops.AdviceGuardInstall), mapAt(2, 2, rw)},
			state(0, "w:0-4 rw-p anon mr,mw,me,gu,ac")},
		{"S18 two opens of one file never merge, dups do",
			[]vmatest.Call{open(1), {Op: vmatest.Reopen, File: ops.VMAFileArgs{Handle: 2, Of: 1}}, {Op: vmatest.Dup, File: ops.VMAFileArgs{Handle: 3, Of: 1}},
				mapFile(0, 2, rw, 1, 0, ops.MapShared), mapFile(2, 2, rw, 2, 2, ops.MapShared), mapFile(4, 2, rw, 3, 4, ops.MapShared)},
			state(0, "w:0-2 rw-s f1+0 mr,mw,me,ms", "w:2-4 rw-s f1+2 mr,mw,me,ms", "w:4-6 rw-s f1+4 mr,mw,me,ms")},
		{"S16 file offsets must be contiguous",
			[]vmatest.Call{open(1), mapFile(0, 2, ro, 1, 0, 0), mapFile(2, 2, ro, 1, 2, 0), mapFile(4, 2, ro, 1, 8, 0)},
			state(0, "w:0-4 r--p f1+0 mr,mw,me", "w:4-6 r--p f1+8 mr,mw,me")},
		{"S08 NORESERVE blocks the merge with a plain reservation",
			[]vmatest.Call{mapFlags(0, 2, none, ops.MapNoReserve), mapAt(2, 2, none)},
			state(0, "w:0-2 ---p anon mr,mw,me,nr", "w:2-4 ---p anon mr,mw,me")},
		{"S76 MAP_STACK sets nh",
			[]vmatest.Call{mapFlags(0, 2, rw, ops.MapStack), mapAt(2, 2, rw)},
			state(0, "w:0-2 rw-p anon mr,mw,me,ac,nh", "w:2-4 "+anonRW)},
		{"B01 brk with a matching predecessor extends it",
			[]vmatest.Call{brk(2), brk(4)},
			state(4, "h:0-4 rw-p anon [heap] mr,mw,me,ac")},
		{"B04 a tail protected r-- blocks growth: a new VMA",
			[]vmatest.Call{brk(4), heap(protect(3, 1, ro)), brk(6)},
			state(6, "h:0-3 rw-p anon [heap] mr,mw,me,ac", "h:3-4 r--p anon [heap] mr,mw,me", "h:4-6 rw-p anon [heap] mr,mw,me,ac")},
		{"B08 brk never merges right, and keeps a free page before the next VMA",
			[]vmatest.Call{brk(2), heap(mapAt(4, 2, rw)), brk(4), brk(3)},
			state(3, "h:0-3 rw-p anon [heap] mr,mw,me,ac", "h:4-6 "+anonRW)},
		{"B09 an rw mmap at the break merges into [heap]",
			[]vmatest.Call{brk(2), heap(mapAt(2, 2, rw))},
			state(2, "h:0-4 rw-p anon [heap] mr,mw,me,ac")},
		{"B03 a shrink can remove [heap] entirely",
			[]vmatest.Call{brk(3), brk(0)},
			state(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := runBoth(t, c.calls...)
			require.Equal(t, c.want, got)
		})
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls []vmatest.Call
		want  []ops.Errno
	}{
		{"S61 mprotect stops at the first hole with ENOMEM", []vmatest.Call{mapAt(0, 2, rw), mapAt(3, 2, rw), protect(0, 5, ro)}, []ops.Errno{0, 0, ops.ENOMEM}},
		{"S62 madvise goes on over holes and returns ENOMEM", []vmatest.Call{mapAt(0, 2, rw), mapAt(3, 2, rw), advise(0, 5, ops.AdviceDontDump)}, []ops.Errno{0, 0, ops.ENOMEM}},
		{"S65 mremap of a range over two VMAs", []vmatest.Call{mapAt(0, 2, rw), mapAt(2, 2, ro), {Op: vmatest.Remap, Args: ops.VMAArgs{Start: 0, Pages: 4, NewPages: 5}}}, []ops.Errno{0, 0, ops.EFAULT}},
		{"S30 mremap growth into a mapped page", []vmatest.Call{mapAt(0, 2, rw), mapAt(2, 2, ro), {Op: vmatest.Remap, Args: ops.VMAArgs{Start: 0, Pages: 2, NewPages: 3}}}, []ops.Errno{0, 0, ops.ENOMEM}},
		{"brk below its start fails", []vmatest.Call{brk(-1)}, []ops.Errno{ops.ENOMEM}},
		{"a shared writable map of a read-only file", []vmatest.Call{open(1), {Op: vmatest.Reopen, File: ops.VMAFileArgs{Handle: 2, Of: 1, ReadOnly: true}}, mapFile(0, 1, rw, 2, 0, ops.MapShared)}, []ops.Errno{0, 0, ops.EACCES}},
		{"a map of a handle not open", []vmatest.Call{mapFile(0, 1, rw, 4, 0, 0)}, []ops.Errno{ebadf}},
		{"a write to a read-only page", []vmatest.Call{mapAt(0, 1, ro), write(0)}, []ops.Errno{0, ops.EFAULT}},
		{"a write past the end of the file", []vmatest.Call{open(1), mapFile(0, 2, rw, 1, ops.VMAFilePages-1, 0), write(0), write(1)}, []ops.Errno{0, 0, 0, ops.EFAULT}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := runBoth(t, c.calls...)
			require.Equal(t, c.want, errs)
		})
	}
}

// The naive and the optimized model agree on random scripts: errnos and
// every intermediate state.
func TestNaiveOptimizedAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		calls := vmatest.Script(40).Draw(t, "script")
		a, err := vmatest.Run(NewNaive(ops.VMAQuirksLinux618), calls)
		if err != nil {
			t.Fatal(err)
		}
		b, err := vmatest.Run(NewOptimized(ops.VMAQuirksLinux618), calls)
		if err != nil {
			t.Fatal(err)
		}
		if d := vmatest.Diff(calls, a, b, "naive", "optimized"); d != "" {
			t.Fatal(d)
		}
	})
}

// The layouts agree with each other on random insertions, removals and
// lookups, and the tree stays balanced.
func TestLayoutsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sl, tr := NewSlice(), NewTree()
		used := map[int64]*[2]*VMA{}
		for range rapid.IntRange(1, 200).Draw(t, "n") {
			p := rapid.Int64Range(0, 99).Draw(t, "page")
			switch {
			case used[p] != nil:
				sl.Remove(used[p][0])
				tr.Remove(used[p][1])
				delete(used, p)
			default:
				a, b := &VMA{Start: p, End: p + 1}, &VMA{Start: p, End: p + 1}
				sl.Insert(a)
				tr.Insert(b)
				used[p] = &[2]*VMA{a, b}
			}
			q := rapid.Int64Range(-1, 101).Draw(t, "query")
			if x, y := sl.Find(q), tr.Find(q); (x == nil) != (y == nil) || x != nil && x.Start != y.Start {
				t.Fatalf("Find(%d): %v vs %v", q, x, y)
			}
			if x, y := sl.Before(q), tr.Before(q); (x == nil) != (y == nil) || x != nil && x.Start != y.Start {
				t.Fatalf("Before(%d): %v vs %v", q, x, y)
			}
		}
		if sl.Len() != tr.Len() || len(tr.All()) != sl.Len() {
			t.Fatalf("lengths %d and %d", sl.Len(), tr.Len())
		}
		if h, n := height(tr.(*treeLayout).root), tr.Len(); n > 0 && float64(h) > 1.45*log2(n+2) {
			t.Fatalf("tree of %d VMAs is %d high", n, h)
		}
	})
}

func log2(n int) float64 {
	l := 0.0
	for ; n > 1; n >>= 1 {
		l++
	}
	return l + 1
}
