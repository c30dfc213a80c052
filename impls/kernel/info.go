package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Info describes the kernel implementation: it covers the ids subsystem and,
// being the reference, its ids are exact by definition. Version is the
// running kernel's release where it can be read.
func Info() ops.Info {
	return ops.Info{
		Name:       "kernel",
		Version:    kernelRelease(),
		Subsystems: []string{"ids", "shm"},
		ExactIDs:   true,
	}
}
