package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// OptionImage boots the kernel side in a QEMU guest from a kernel image
// (vm.go); the adapter in the guest takes it and ignores it.
const OptionImage = "image"

// Options are the options the kernel's Reset takes: caps, and only the
// value this process really has (the kernel cannot pretend); image, the
// kernel to boot in a VM instead of this machine's.
var Options = ops.OptionSpecs{
	withNote(ops.CapsOption, "only what the process has"),
	{Name: OptionImage, Values: []string{""}, Free: "PATH", Doc: "a kernel to run in a QEMU guest instead of this machine's",
		Note: "a vmlinux, bzImage or Debian .deb booted in QEMU, KVM where the CPU has it, else TCG"},
}

func withNote(o ops.OptionSpec, note string) ops.OptionSpec {
	o.Note = note
	return o
}

// Release is the running kernel's release, "Linux <release>", or "" where
// it cannot be read.
func Release() string { return kernelRelease() }
