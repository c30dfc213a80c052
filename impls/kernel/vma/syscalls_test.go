package vma

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The helper's system calls are counted where the kernel can: a map is
// its mmap and the calls of the request's round trip (read, write).
func TestHelperSyscallCount(t *testing.T) {
	h := start(t, Options{})
	pid, before, ok := h.SyscallCount()
	if !ok {
		t.Skip("the kernel offers no syscall counter here (root and the raw_syscalls tracepoint are needed)")
	}
	_, err := h.Map(ops.VMAArgs{Start: 0, Pages: 1, Prot: ops.ProtRead})
	require.NoError(t, err)
	pid2, after, ok := h.SyscallCount()
	require.True(t, ok)
	require.Equal(t, pid, pid2)
	require.GreaterOrEqual(t, after-before, int64(2), "at least the mmap and the answer")
	require.Less(t, after-before, int64(20))
}
