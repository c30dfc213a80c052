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

// While timing is on, each request asks for the helper's CPU time on it
// and the clock reads that took (the first also measures the clock's
// cost); while it is off nothing is asked and nothing added.
func TestHelperSyscallTime(t *testing.T) {
	h := start(t, Options{})
	_, err := h.Map(ops.VMAArgs{Start: 0, Pages: 1, Prot: ops.ProtRead})
	require.NoError(t, err)
	nanos, reads := h.SyscallTime()
	require.Zero(t, nanos)
	require.Zero(t, reads)

	h.TimeSyscalls(true)
	_, err = h.Map(ops.VMAArgs{Start: 4, Pages: 8, Prot: ops.ProtRead | ops.ProtWrite})
	require.NoError(t, err)
	first, firstReads := h.SyscallTime()
	require.Positive(t, first, "the CPU time of an mmap")
	require.Equal(t, int64(2+2*4), firstReads, "two reads, and four pairs for the clock's cost")
	_, err = h.Unmap(ops.VMAArgs{Start: 4, Pages: 8})
	require.NoError(t, err)
	second, secondReads := h.SyscallTime()
	require.Greater(t, second, first)
	require.Equal(t, firstReads+2, secondReads)

	h.TimeSyscalls(false)
	_, err = h.Map(ops.VMAArgs{Start: 4, Pages: 1, Prot: ops.ProtRead})
	require.NoError(t, err)
	nanos, reads = h.SyscallTime()
	require.Equal(t, second, nanos)
	require.Equal(t, secondReads, reads)
}
