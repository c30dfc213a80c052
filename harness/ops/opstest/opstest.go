// Package opstest holds the helpers that tests of several packages share to
// write their scripts as text: a whole script, or operations one a line.
// Only tests use it.
package opstest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Script parses the text of a whole script (its subsystem line first) and
// returns it; a text that does not parse fails the test.
func Script(t testing.TB, text string) *ops.Script {
	t.Helper()
	sc, err := ops.ParseString(text)
	require.NoError(t, err)
	return sc
}

// Ops parses the text of a whole script and returns its operations; a text
// that does not parse fails the test.
func Ops(t testing.TB, text string) []ops.Op {
	t.Helper()
	return Script(t, text).Ops()
}

// Lines parses one operation a line (no subsystem line) and returns them in
// order; a line that does not parse fails the test, naming the line.
func Lines(t testing.TB, lines ...string) []ops.Op {
	t.Helper()
	out := make([]ops.Op, 0, len(lines))
	for _, l := range lines {
		op, err := ops.ParseOp(l)
		require.NoError(t, err, l)
		out = append(out, op)
	}
	return out
}
