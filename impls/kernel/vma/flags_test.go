//go:build linux && amd64

package vma

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// VmFlags are read with any names: 6.1 prints "??" for VM_LOCKONFAULT,
// and a newer kernel may print a name this build does not know; both are
// the unnamed flag, never an error that would kill the adapter
// (vm-probe.md §5).
func TestVmFlagsTakeAnyName(t *testing.T) {
	h := &Helper{opt: Options{}.withDefaults(), startBrk: 0x1000000, inodes: map[uint64]int{}}
	smaps := "200000000000-200000002000 rw-p 00000000 00:00 0 \n" +
		"VmFlags: rd wr mr mw me lo ?? ac sd \n" +
		"200000003000-200000004000 r--p 00000000 00:00 0 \n" +
		"VmFlags: rd mr mw me zz \n" +
		"1000000-1001000 rw-p 00000000 00:00 0 [heap]\n" +
		"VmFlags: rd wr mr mw me ac \n"
	st, err := h.parseState([]byte(smaps), 0x1001000)
	require.NoError(t, err)
	require.Len(t, st.VMAs, 3)
	require.Equal(t, "mr,mw,me,lo,ac,sd,??", st.VMAs[0].Flags.String())
	require.Equal(t, "mr,mw,me,??", st.VMAs[1].Flags.String())
	require.Equal(t, "mr,mw,me,ac", st.VMAs[2].Flags.String())
	require.True(t, st.VMAs[2].HeapLabel)
	_, err = ops.ParseVMAFlags(st.VMAs[0].Flags.String())
	require.NoError(t, err, "the text of an unnamed flag parses back")
}
