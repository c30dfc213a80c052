//go:build !(linux && amd64)

package kernel

import (
	"fmt"
	"runtime"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// New fails: the kernel implementation needs Linux on x86-64 (the SysV IPC
// struct layouts it reads are those of that ABI).
func New() (ops.Model, error) {
	return nil, fmt.Errorf("kernel: not supported on %s/%s (needs linux/amd64)", runtime.GOOS, runtime.GOARCH)
}

// machineFacts reports nothing where the kernel implementation cannot run.
func machineFacts() ops.Facts { return ops.Facts{} }
