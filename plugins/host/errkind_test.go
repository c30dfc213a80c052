package host

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each kind has its name in error messages; a value that is no kind says
// its number.
func TestErrKindNames(t *testing.T) {
	require.Equal(t, []string{"ErrKind(0)", "cannot start", "handshake failed", "crashed", "hung", "sent garbage", "implementation failed", "ErrKind(7)", "ErrKind(-1)"},
		[]string{ErrKind(0).String(), Start.String(), Handshake.String(), Crashed.String(), Hung.String(), Garbage.String(), Failed.String(), ErrKind(7).String(), ErrKind(-1).String()})
}
