package impls_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// Every value of caps= a model's Options names is taken, the default
// spelled out too; any other value is refused.
func TestModelsTakeEveryCapsValue(t *testing.T) {
	for _, name := range []string{"naive", "optimized"} {
		b, err := impls.Lookup(name)
		require.NoError(t, err)
		m, err := b.New()
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		for _, v := range []string{"none", ops.CapSysResource} {
			require.NoError(t, m.Reset(ops.Config{Options: map[string]string{ops.OptionCaps: v}}), "%s caps=%s", name, v)
		}
		require.Error(t, m.Reset(ops.Config{Options: map[string]string{ops.OptionCaps: "all"}}), "%s caps=all", name)
	}
}
