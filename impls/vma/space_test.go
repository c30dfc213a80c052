package vma

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/vma/vmatest"
)

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

// The worked cases of vma-spec §5 and the rules of §2 to §4, through the
// syscalls.
func TestSpecCases(t *testing.T) {
	for _, c := range vmatest.SpecCases() {
		t.Run(c.Name, func(t *testing.T) {
			got, _ := runBoth(t, c.Calls...)
			require.Equal(t, c.Want, got)
		})
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range vmatest.SpecErrorCases() {
		t.Run(c.Name, func(t *testing.T) {
			_, errs := runBoth(t, c.Calls...)
			require.Equal(t, c.Errs, errs)
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

// A mapping at the start of an empty heap is [heap] on a kernel that
// labels inclusively (6.1), and not on 6.18; a mapping inside the heap is
// on both.
func TestHeapLabelInclusive(t *testing.T) {
	atStart := []vmatest.Call{{Op: vmatest.Map, Args: ops.VMAArgs{Heap: true, Start: 0, Pages: 1, Prot: ops.ProtRead}}}
	for q, want := range map[ops.VMAQuirks]string{
		ops.VMAQuirksLinux618:                               "brk=0\nh:0-1 r--p anon mr,mw,me\n",
		ops.VMAQuirksLinux618 | ops.QuirkHeapLabelInclusive: "brk=0\nh:0-1 r--p anon [heap] mr,mw,me\n",
	} {
		for _, s := range []*Space{NewNaive(q), NewOptimized(q)} {
			st, err := vmatest.Run(s, atStart)
			require.NoError(t, err)
			require.Equal(t, want, ops.FormatVMAState(st[len(st)-1].State), "quirks %s", q)
		}
	}
}

// Without swap (a kernel built without CONFIG_SWAP, as the minimal guests
// are) MADV_WILLNEED refuses a private anonymous VMA with EBADF and takes
// a shared one; with swap it takes both. The walk stops at the refusal.
func TestWillNeedWithoutSwap(t *testing.T) {
	calls := []vmatest.Call{
		{Op: vmatest.Map, Args: ops.VMAArgs{Start: 0, Pages: 2, Prot: ops.ProtRead | ops.ProtWrite, Flags: ops.MapShared}},
		{Op: vmatest.Map, Args: ops.VMAArgs{Start: 2, Pages: 2, Prot: ops.ProtRead | ops.ProtWrite}},
		{Op: vmatest.Advise, Args: ops.VMAArgs{Start: 0, Pages: 2, Advice: ops.AdviceWillNeed}},
		{Op: vmatest.Advise, Args: ops.VMAArgs{Start: 0, Pages: 4, Advice: ops.AdviceWillNeed}},
		{Op: vmatest.Advise, Args: ops.VMAArgs{Start: 0, Pages: 8, Advice: ops.AdviceWillNeed}},
	}
	for q, want := range map[ops.VMAQuirks][]ops.Errno{
		ops.VMAQuirksLinux61:                    {ops.OK, ops.OK, ops.OK, ops.OK, ops.ENOMEM},
		ops.VMAQuirksLinux61 | ops.QuirkNoSwap:  {ops.OK, ops.OK, ops.OK, ops.EBADF, ops.EBADF},
		ops.VMAQuirksLinux618 | ops.QuirkNoSwap: {ops.OK, ops.OK, ops.OK, ops.EBADF, ops.EBADF},
	} {
		for _, s := range []*Space{NewNaive(q), NewOptimized(q)} {
			st, err := vmatest.Run(s, calls)
			require.NoError(t, err)
			var got []ops.Errno
			for _, x := range st {
				got = append(got, x.Errno)
			}
			require.Equal(t, want, got, "quirks %s", q)
		}
	}
}
