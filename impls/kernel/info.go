package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Info describes the kernel implementation: it covers the ids, shm, msg and
// sem subsystems, its tasks block for real (Blocking) and, being the
// reference, its ids are exact by definition; it follows nobody (where
// woken tasks race, the kernel's way is the one the models follow).
// Version is the running kernel's release where it can be read; Limits
// holds the answers of this machine that the models take as options
// (LimitShmMaxPages).
func Info() ops.Info {
	return ops.Info{
		Name:       "kernel",
		Version:    kernelRelease(),
		Subsystems: []string{"ids", "shm", "msg", "sem"},
		ExactIDs:   true,
		Blocking:   true,
		Limits:     machineLimits(),
	}
}
