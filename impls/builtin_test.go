package impls_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/vma"
)

// Every value of caps= a model's Options names is taken, the default
// spelled out too; any other value is refused.
func TestModelsTakeEveryCapsValue(t *testing.T) {
	for _, name := range []string{"naive", "optimized"} {
		b, err := impls.Lookup(name)
		require.NoError(t, err)
		m, _, err := b.Start()
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		for _, v := range []string{"none", ops.CapSysResource} {
			require.NoError(t, m.Reset(ops.Config{Options: map[string]string{ops.OptionCaps: v}}), "%s caps=%s", name, v)
		}
		require.Error(t, m.Reset(ops.Config{Options: map[string]string{ops.OptionCaps: "all"}}), "%s caps=all", name)
	}
}

// What a built-in says of itself comes from its parts: the subsystems they
// run, following, blocking, and the options (an unknown one is refused,
// naming every option there is).
func TestBuiltinsDescribeThemselvesFromTheirParts(t *testing.T) {
	for _, name := range []string{"naive", "optimized"} {
		b, err := impls.Lookup(name)
		require.NoError(t, err)
		m, info, err := b.Start()
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		require.Subset(t, info.Subsystems, []string{"ids", "shm", "msg", "sem", "vma"}, name)
		require.Equal(t, b.Subsystems(), info.Subsystems, name)
		require.True(t, info.Follows, name)
		require.True(t, info.Blocking, name)
		require.True(t, info.Counters, name)
		require.True(t, info.Facts.Empty(), "a model reports no machine facts")
		err = m.Reset(ops.Config{Options: map[string]string{"nosuch": "1"}})
		require.EqualError(t, err, "unknown option nosuch=1 (have "+strings.ReplaceAll(b.Options().String(), ",", ", ")+")")
	}
	// A part that runs only the vma kinds makes an implementation of the
	// vma subsystem alone, that does not block or follow.
	c := impls.Compose(impls.VMAPart(impls.NewVMAModelPart(func(q ops.VMAQuirks) ops.AddressSpace { return vma.NewOptimized(q) })))
	info := c.Describe(ops.Info{Name: "vma-only"})
	require.Equal(t, []string{"vma"}, info.Subsystems)
	require.False(t, info.Follows)
	require.False(t, info.Blocking)
}
