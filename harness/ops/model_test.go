package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// An option written with no value (kernel:image=, what kernel:image=$UNSET
// expands to) is refused naming the implementation and the option; one
// with a value is read.
func TestParseImplNameRefusesAnOptionWithoutValue(t *testing.T) {
	for _, spec := range []string{"kernel:image=", "naive:alloc=", "naive:alloc=legacy,caps="} {
		_, _, err := ops.ParseImplName(spec)
		require.Error(t, err, spec)
		require.Contains(t, err.Error(), spec)
		require.Contains(t, err.Error(), "has no value")
	}
	_, _, err := ops.ParseImplName("naive:alloc=legacy,caps=")
	require.ErrorContains(t, err, "option caps= has no value")
	name, cfg, err := ops.ParseImplName("naive:alloc=legacy")
	require.NoError(t, err)
	require.Equal(t, "naive", name)
	require.Equal(t, "legacy", cfg.Options["alloc"])
}
