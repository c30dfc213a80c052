//go:build linux && amd64

package vma

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A fork hands the helper on to its child: the child serves (a child of
// this process, with the layout the parent had, the faulted VMA a fork
// child that refuses an unwritten neighbour), the parent is gone, and
// Close ends the child.
func TestForkHandsOnToTheChild(t *testing.T) {
	h := start(t, Options{})
	parent := h.Pid()
	rw := ops.ProtRead | ops.ProtWrite
	for _, call := range []func() (ops.Errno, error){
		func() (ops.Errno, error) { return h.Map(ops.VMAArgs{Start: 0, Pages: 2, Prot: rw}) },
		func() (ops.Errno, error) { return h.Touch(ops.VMAArgs{Start: 0, Write: true}) },
		h.Fork,
		func() (ops.Errno, error) { return h.Map(ops.VMAArgs{Start: 2, Pages: 2, Prot: rw}) },
	} {
		e, err := call()
		require.NoError(t, err)
		require.Equal(t, ops.OK, e)
	}
	child := h.Pid()
	require.NotEqual(t, parent, child)
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(parent)))
	require.True(t, os.IsNotExist(err), "the forked helper's parent is still there")
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(child), "status"))
	require.NoError(t, err)
	require.Contains(t, string(status), "PPid:\t"+strconv.Itoa(os.Getpid())+"\n", "the child is not this process's")
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(ops.FormatVMAState(st), "\nw:"), "the fork child merged: %s", ops.FormatVMAState(st))
	require.NoError(t, h.Close())
	_, err = os.Stat(filepath.Join("/proc", strconv.Itoa(child)))
	require.True(t, os.IsNotExist(err), "the child outlived Close")
}
