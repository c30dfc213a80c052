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
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, VMADifference(vmaState(t, c.a...), vmaState(t, c.b...)))
		})
	}
	a, b := vmaState(t), vmaState(t)
	b.Brk = 2
	require.Equal(t, "brk", VMADifference(a, b))
	require.Equal(t, "brk", SnapshotDifference("vma", Snapshot{VMA: a}, Snapshot{VMA: b}))
	require.Empty(t, SnapshotDifference("msg ids", Snapshot{VMA: a}, Snapshot{VMA: b}))
	require.Equal(t, "brk", ResultDifference(Op{Kind: KindLayout}, Result{Layout: a}, Result{Layout: b}))
	require.Empty(t, ResultDifference(Op{Kind: KindMap}, Result{Layout: a}, Result{Layout: b}))
}
