package cover

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// unreached.tsv parses, and a function it names is explained only in its
// file and by its whole name.
func TestUnreachedTable(t *testing.T) {
	us, err := parseUnreached(unreachedTSV)
	require.NoError(t, err)
	us = append(us, unreachable{file: "mm/x.c", fn: regexp.MustCompile("^(?:foo(\\.part\\.\\d+)?)$"), why: "not spoken"})
	require.Equal(t, "not spoken", why(us, "mm/x.c", "foo.part.0"))
	require.Empty(t, why(us, "mm/y.c", "foo"))
	require.Empty(t, why(us, "mm/x.c", "foobar"))
	_, err = parseUnreached("mm/x.c\tfoo")
	require.Error(t, err)
}
