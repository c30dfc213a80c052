package impls

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A model shows VmFlags as the other side's kernel names them: sd on every
// VMA of a kernel with soft-dirty tracking, "??" for VM_LOCKONFAULT where
// the kernel has no name for it (Debian's 6.1, vm-probe.md §5).
func TestShowFlags(t *testing.T) {
	f := ops.MustVMAFlags("mr mw me lo lf ac")
	require.Equal(t, f, showFlags(f, ops.VMAQuirksLinux618))
	require.Equal(t, "mr,mw,me,lo,ac,sd,lf", showFlags(f, ops.QuirkSoftDirty).String())
	require.Equal(t, "mr,mw,me,lo,ac,??", showFlags(f, ops.QuirkLockOnFaultUnnamed).String())
	require.Equal(t, "mr,mw,me,sd", showFlags(ops.MustVMAFlags("mr mw me"), ops.QuirkSoftDirty|ops.QuirkLockOnFaultUnnamed).String())
}
