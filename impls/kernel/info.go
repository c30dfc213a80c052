package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Options are the options the kernel's Reset takes: caps, and only the
// value this process really has (the kernel cannot pretend).
var Options = ops.OptionSpecs{withNote(ops.CapsOption, "only what the process has")}

func withNote(o ops.OptionSpec, note string) ops.OptionSpec {
	o.Note = note
	return o
}

// Release is the running kernel's release, "Linux <release>", or "" where
// it cannot be read.
func Release() string { return kernelRelease() }
