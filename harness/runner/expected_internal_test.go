package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// Two version differences seen on one VMA at once (6.1's VM_LOCKONFAULT
// without a mnemonic, and MAP_STACK without VM_NOHUGEPAGE before 6.7) make
// one flags signature that no entry matches whole: the entries whose own
// flags make it up, together, explain it; the hits count under the first,
// the others are named beside it and are not stale. Flags that no entry
// covers leave the signature a finding.
func TestSeveralFlagDifferencesAtOnceAreExpected(t *testing.T) {
	entries, err := corpus.ParseKnown("vma.known", "vma/space/flags+lf-unnamed <6.2 - VM_LOCKONFAULT has no mnemonic\nvma/space/flags+nh <6.7 - MAP_STACK sets VM_NOHUGEPAGE\n")
	require.NoError(t, err)
	c := &collector{o: Options{Known: &corpus.Known{Entries: entries}}, pair: &Pair{Subsystem: "vma"},
		res: &Result{KernelA: "6.1.0-57-amd64", KernelB: "6.18.44"}, known: map[*corpus.KnownEntry]int{}}
	// A is 6.1, in both ranges: the entries are written with it as B.
	require.True(t, c.expected(3, "vma/space/flags+unnamed-lf,nh"))
	require.Len(t, c.res.Expected, 1)
	x := c.res.Expected[0]
	require.Equal(t, 1, x.Hits)
	require.Equal(t, []ExpectedSignature{{Signature: "vma/space/flags+unnamed-lf,nh", Hits: 1, Index: 3, With: []string{"vma/space/flags+nh"}}}, x.Signatures)
	require.Empty(t, c.stale())
	require.False(t, c.expected(4, "vma/space/flags+unnamed-lf,nh,ac"), "ac is no version difference here")
	require.False(t, c.expected(5, "vma/space/flags+unnamed"), "a part of an entry's flags")

	// The sides the other way round: 6.1 is B, as the entries are written.
	c.res, c.known = &Result{KernelA: "6.18.44", KernelB: "6.1.0-57-amd64"}, map[*corpus.KnownEntry]int{}
	require.True(t, c.expected(0, "vma/space/flags+nh,lf-unnamed"))
	require.Equal(t, []string{"vma/space/flags+nh"}, c.res.Expected[0].Signatures[0].With)
}
