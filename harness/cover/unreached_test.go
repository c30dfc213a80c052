package cover

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// unreached.tsv parses, and a function it names is explained only in its
// file and by its whole name.
func TestUnreachedTable(t *testing.T) {
	us, err := parseUnreached(unreachedTSV)
	require.NoError(t, err)
	us = append(us, unreachable{file: "mm/x.c", fn: regexp.MustCompile(`^(?:foo(\.part\.\d+)?)$`), why: "not spoken"})
	require.Equal(t, "not spoken", why(us, "mm/x.c", "foo.part.0"))
	require.Empty(t, why(us, "mm/y.c", "foo"))
	require.Empty(t, why(us, "mm/x.c", "foobar"))
	_, err = parseUnreached("mm/x.c\tfoo")
	require.Error(t, err)
}

// A run's program counters are written once each, sorted, in hex, and
// read back as they were.
func TestPCsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r", PCsFile)
	require.NoError(t, WritePCs(path, []uint64{0xffffffff81000020, 0xffffffff81000010, 0xffffffff81000020}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "0xffffffff81000010\n0xffffffff81000020\n", string(data))
	pcs, err := ReadPCs(path)
	require.NoError(t, err)
	require.Equal(t, []uint64{0xffffffff81000010, 0xffffffff81000020}, pcs)
	require.NoError(t, os.WriteFile(path, []byte("0x10\nzz\n"), 0o644))
	_, err = ReadPCs(path)
	require.ErrorContains(t, err, ":2:")
}
