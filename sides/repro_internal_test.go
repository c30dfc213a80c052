package sides

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildFlags(t *testing.T) {
	src := []byte("/*\n * Build and run:\n *   cc -O2 -o repro repro.c && ./repro\n */\n")
	require.Equal(t, []string{"-O2"}, buildFlags(src))
	require.Equal(t, []string{"-O2", "-static"}, buildFlags([]byte("int main(void) { return 0; }\n")))
}
