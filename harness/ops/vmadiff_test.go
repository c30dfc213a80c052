package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// vmaState reads "brk=N" and VMA lines, for the tests.
func vmaState(t *testing.T, lines ...string) VMAState {
	t.Helper()
	text := "brk=0\n"
	for _, l := range lines {
		text += l + "\n"
	}
	s, err := ParseVMAState(text)
	require.NoError(t, err)
	return s
}

// The four differences between 6.18 and 6.1 (corpus/vma/kernel-6.1-*.ops)
// and the others VMADifference names, each distinct.
func TestVMADifference(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []string
		want string
	}{
		{"equal", []string{"w:0-1 rw-p anon mr,mw,me"}, []string{"w:0-1 rw-p anon mr,mw,me"}, ""},
		{"3-way merge of a new mapping", []string{"w:0-4 -w-p anon mr,mw,me,ac"}, []string{"w:0-1 -w-p anon mr,mw,me,ac", "w:1-4 -w-p anon mr,mw,me,ac"}, "A-merges"},
		{"B merges", []string{"w:4-5 rw-p anon ac", "w:5-6 rw-p anon ac"}, []string{"w:4-6 rw-p anon ac"}, "B-merges"},
		{"split elsewhere", []string{"w:0-1 rw-p anon ac", "w:1-3 rw-p anon ac"}, []string{"w:0-2 rw-p anon ac", "w:2-3 rw-p anon ac"}, "boundaries"},
		{"file offsets that do not continue", []string{"w:0-2 r--p f1+0 mr"}, []string{"w:0-1 r--p f1+0 mr", "w:1-2 r--p f1+5 mr"}, "extent"},
		{"[heap] label", []string{"h:0-1 r--p anon mr,mw,me"}, []string{"h:0-1 r--p anon [heap] mr,mw,me"}, "heap-label"},
		{"lf against ??", []string{"w:0-1 rw-p anon mr,mw,me,lo,lf"}, []string{"w:0-1 rw-p anon mr,mw,me,lo,??"}, "flags+lf-unnamed"},
		{"a flag only A has", []string{"w:0-1 r--p anon mr,mw,me,nh"}, []string{"w:0-1 r--p anon mr,mw,me"}, "flags+nh"},
		{"a flag only B has", []string{"w:0-1 r--p anon mr"}, []string{"w:0-1 r--p anon mr,ac"}, "flags-ac"},
		{"perms", []string{"w:0-1 r--p anon mr"}, []string{"w:0-1 rw-p anon mr"}, "perms"},
		{"pkey", []string{"w:0-1 --xp anon mr"}, []string{"w:0-1 --xp anon pkey=15 mr"}, "pkey"},
		{"backing", []string{"w:0-1 r--p f1+0 mr"}, []string{"w:0-1 r--p f2+0 mr"}, "backing"},
		{"only A maps", []string{"w:0-1 r--p anon mr", "w:2-3 r--p anon mr"}, []string{"w:2-3 r--p anon mr"}, "only-A"},
		{"only B maps, at the end", []string{"w:0-1 r--p anon mr"}, []string{"w:0-1 r--p anon mr", "h:0-1 r--p anon mr"}, "only-B"},
		{"different extents, different perms", []string{"w:0-2 r--p anon mr"}, []string{"w:0-3 rw-p anon mr"}, "perms"},
		{"A merges here, [heap] differs further on", []string{"w:0-2 -w-p anon ac", "h:0-1 r--p anon mr"}, []string{"w:0-1 -w-p anon ac", "w:1-2 -w-p anon ac", "h:0-1 r--p anon [heap] mr"}, "A-merges"},
		{"split differently here, a flag differs further on", []string{"w:0-2 rwxp anon ac", "w:2-3 rwxp anon ac", "w:5-6 r--p anon mr"}, []string{"w:0-1 rwxp anon ac", "w:1-3 rwxp anon ac", "w:5-6 r--p anon mr,ac"}, "boundaries"},
		{"the same start, B maps less", []string{"h:0-2 rw-p anon [heap] ac"}, []string{"h:0-1 rw-p anon [heap] ac"}, "extent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, VMADifference(vmaState(t, c.a...), vmaState(t, c.b...)))
		})
	}
	a, b := vmaState(t), vmaState(t)
	b.Brk = 2
	require.Equal(t, "brk", VMADifference(a, b))
	require.Equal(t, Difference{"space", "brk"}, FinalDifference("vma", Snapshot{VMA: a}, Snapshot{VMA: b}))
	require.True(t, FinalDifference("msg ids", Snapshot{VMA: a}, Snapshot{VMA: b}).IsZero())
	require.Equal(t, Difference{"space", "brk"}, StepDifference(Op{Kind: KindLayout}, Result{Layout: a}, Result{Layout: b}))
	require.True(t, StepDifference(Op{Kind: KindMap}, Result{Layout: a}, Result{Layout: b}).IsZero())
}

// A listing difference names a duplicated row first, then a count, then
// the first column that differs (the id last).
func TestListingDifference(t *testing.T) {
	r := func(id, size, nattch int64) Row { return Row{ID: id, Size: size, Nattch: nattch, Mode: 0o600} }
	for _, c := range []struct {
		name string
		a, b []Row
		want string
	}{
		{"equal", []Row{r(1, 1, 0)}, []Row{r(1, 1, 0)}, ""},
		{"a row twice on B", []Row{r(1, 1, 0)}, []Row{r(1, 1, 0), r(1, 1, 0)}, "dup-row"},
		{"a row twice on A, same count", []Row{r(1, 1, 0), r(1, 1, 0)}, []Row{r(1, 1, 0), r(2, 1, 0)}, "dup-row"},
		{"one more row", []Row{r(1, 1, 0)}, []Row{r(1, 1, 0), r(2, 1, 0)}, "rows"},
		{"nattch", []Row{r(1, 1, 0)}, []Row{r(1, 1, 1)}, "nattch"},
		{"size before nattch", []Row{r(1, 1, 0)}, []Row{r(1, 2, 1)}, "size"},
		{"the id last", []Row{r(1, 1, 0)}, []Row{r(2, 1, 1)}, "nattch"},
		{"only the id", []Row{r(1, 1, 0)}, []Row{r(2, 1, 0)}, "shmid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, ListingDifference(Shm, c.a, c.b))
		})
	}
	var a, b Snapshot
	a.Rows[Msg], b.Rows[Msg] = []Row{r(1, 0, 0)}, []Row{r(1, 0, 0), r(1, 0, 0)}
	require.Equal(t, Difference{"listing/msg", "dup-row"}, FinalDifference("msg ids", a, b))
	require.Equal(t, Difference{"listing/msg", "dup-row"}, Anomaly(b))
	require.True(t, Anomaly(a).IsZero())
}
