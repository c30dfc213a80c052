package corpus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A known-differences file is read strictly: every bad line is an error
// naming the file and the line.
func TestParseKnownIsStrict(t *testing.T) {
	good := "# a comment\n\nvma/seal/*ENOSYS*  <6.10  8be7258aad44  mseal absent before 6.10 (ENOSYS)\n" +
		"vma/space/heap-label 6.1-6.5 - the [heap] label,  strict  later\n"
	es, err := ParseKnown("vma.known", good)
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, "vma/seal/*ENOSYS*", es[0].Pattern)
	require.Equal(t, "<6.10", es[0].Range)
	require.Equal(t, "8be7258aad44", es[0].Commit)
	require.Equal(t, "mseal absent before 6.10 (ENOSYS)", es[0].Reason)
	require.Equal(t, "vma.known:3", es[0].Where())
	require.Equal(t, "the [heap] label,  strict  later", es[1].Reason)
	require.Equal(t, "-", es[1].Commit)
	for _, c := range []struct{ text, want string }{
		{"vma/seal/ok-ENOSYS <6.10 8be7258aad44\n", "vma.known:1: want SIGNATURE RELEASES COMMIT REASON"},
		{"\n# c\nseal/ok <6.10 8be7258aad44 r\n", `vma.known:3: signature pattern "seal/ok": "seal" is not a subsystem`},
		{"vma/seal/[ok <6.10 8be7258aad44 r\n", `vma.known:1: signature pattern "vma/seal/[ok"`},
		{"vma/seal/ok 6.x 8be7258aad44 r\n", `vma.known:1: releases "6.x"`},
		{"vma/seal/ok <6 8be7258aad44 r\n", `vma.known:1: releases "<6"`},
		{"vma/seal/ok 6.12-6.1 8be7258aad44 r\n", "the range is empty"},
		{"vma/seal/ok <6.10 8be7 r\n", `vma.known:1: commit "8be7"`},
		{"vma/seal/ok <6.10 HEAD r\n", `commit "HEAD"`},
	} {
		_, err := ParseKnown("vma.known", c.text)
		require.ErrorContains(t, err, c.want, c.text)
	}
}

// An entry applies to two kernels one of which is in its range and the
// other not, at the precision its versions are written in; a model side
// (no release) is never in a comparison an entry speaks of.
func TestKnownEntryApplies(t *testing.T) {
	es, err := ParseKnown("x.known", "vma/a <6.10 - a\nvma/b 6.1-6.12 - b\nvma/c >=6.13 - c\nvma/d 6.12 - d\nvma/e <=6.1.100 - e\n")
	require.NoError(t, err)
	const host, deb61, deb612 = "6.18.44-fc-v1272", "6.1.0-57-amd64", "6.12.118+deb12-amd64"
	for _, c := range []struct {
		entry int
		a, b  string
		want  bool
	}{
		{0, host, deb61, true}, {0, deb61, host, true}, {0, host, deb612, false}, {0, deb61, deb61, false},
		{0, "", deb61, false}, {0, deb61, "", false},
		{1, host, deb61, true}, {1, host, deb612, true}, {1, deb61, deb612, false},
		{2, host, deb612, true}, {2, host, deb61, true}, {2, deb61, deb612, false},
		{3, host, deb612, true}, {3, deb61, deb612, true}, {3, host, deb61, false},
		{4, host, deb61, true}, {4, "6.1.101", deb61, true}, {4, "6.1.101", host, false},
	} {
		require.Equal(t, c.want, es[c.entry].Applies(c.a, c.b), "%s %s vs %s", es[c.entry].Range, c.a, c.b)
	}
	k := &Known{Entries: es}
	mirror := func(s string) string { return s + "~" }
	require.Equal(t, es[0], k.Match("vma/a", host, deb61, mirror))
	require.Nil(t, k.Match("vma/a", deb61, host, mirror), "A in the range: the mirrored signature is matched")
	require.Equal(t, es[0], k.Match("vma/a", deb61, host, func(string) string { return "vma/a" }))
	require.Nil(t, k.Match("vma/a", host, deb612, mirror))
	require.Nil(t, k.Match("vma/z", host, deb61, mirror))
}

// The seeded corpus/known files parse.
func TestSeededKnownFilesParse(t *testing.T) {
	dir := filepath.Join("..", "..", "corpus", "known")
	if _, err := os.Stat(dir); err != nil {
		t.Skip(err)
	}
	k, err := ReadKnown(dir)
	require.NoError(t, err)
	require.NotEmpty(t, k.Entries)
}
