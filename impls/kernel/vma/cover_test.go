//go:build linux && amd64

package vma

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// TestCover: the helper collects the kernel's program counters of its
// operations where the kernel has KCOV (a guest of ci/kernel.sh --cover),
// says it cannot elsewhere, and answers the operations alike either way.
func TestCover(t *testing.T) {
	h := start(t, Options{})
	on, err := h.EnableCover()
	require.NoError(t, err)
	_, statErr := os.Stat("/sys/kernel/debug/kcov")
	require.Equal(t, statErr == nil, on, "EnableCover says whether the kernel has KCOV")
	e, err := h.Map(ops.VMAArgs{Start: 2, Pages: 2, Prot: ops.ProtRead})
	require.NoError(t, err)
	require.Equal(t, ops.OK, e)
	pcs, err := h.CoverPCs()
	require.NoError(t, err)
	if !on {
		require.Empty(t, pcs)
		t.Skip("the rest needs a kernel with KCOV (/sys/kernel/debug/kcov)")
	}
	require.NotEmpty(t, pcs, "a mmap reached no kernel code")
	again, err := h.CoverPCs()
	require.NoError(t, err)
	require.Less(t, len(again), len(pcs), "a read empties the buffer")
	e, err = h.Fork()
	require.NoError(t, err)
	require.Equal(t, ops.OK, e)
	_, err = h.Unmap(ops.VMAArgs{Start: 2, Pages: 1})
	require.NoError(t, err)
	pcs, err = h.CoverPCs()
	require.NoError(t, err)
	require.NotEmpty(t, pcs, "the fork's child collects its own")
}
