package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An infrastructure event keeps the last lines of the side's stderr.
func TestLastLines(t *testing.T) {
	require.Equal(t, "b\nc", lastLines("a\nb\nc\n", 2))
	require.Equal(t, "a", lastLines("a", 5))
}
