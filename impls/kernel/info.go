package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// OptionImage boots the kernel side in a guest from a kernel image
// (vm.go). Like every option of the VM (VMOptions), it is the boot's: the
// adapter in the guest is never given it.
const OptionImage = "image"

// OptionVM names the backend that boots the guest (Backends; default
// qemu): kernel:vm=qemu,image=PATH.
const OptionVM = "vm"

// OptionSource, OptionBase and OptionPatches build the kernel the VM boots
// (kernel:source=DIR[,patches=DIR], kernel:base=6.12[,patches=DIR]): a
// source tree or Debian's linux-source of a base, with a series of
// patches, built by ci/kernel.sh's recipe and cached.
const (
	OptionSource  = "source"
	OptionBase    = "base"
	OptionPatches = "patches"
)

// OptionCPUs sizes the guest an option of VMOptions boots: its vCPUs
// (kernel:image=PATH,cpus=1). Like those, it is the boot's alone.
const OptionCPUs = "cpus"

// MaxGuestCPUs bounds cpus=.
const MaxGuestCPUs = 8

// VMOptions are the options that boot the kernel side in a guest (one of
// them set: package sides boots it). They are the boot's alone: the side's
// Reset in the guest is given none of them, nor caps=, which the boot
// gives the guest's root.
func VMOptions() []string {
	return []string{OptionVM, OptionImage, OptionSource, OptionBase, OptionPatches}
}

// Options are the options the kernel's Reset takes: caps, and only the
// value this process really has (the kernel cannot pretend); image, the
// kernel to boot in a VM instead of this machine's, and the other
// VMOptions.
var Options = ops.OptionSpecs{
	withNote(ops.CapsOption, "only what the process has"),
	{Name: OptionImage, Values: []string{""}, Free: "PATH", Doc: "a kernel to run in a guest instead of this machine's (a path with a comma: image=\"a,b\")",
		Note: "a vmlinux, bzImage or Debian .deb booted in QEMU, KVM where the CPU has it, else TCG"},
	{Name: OptionVM, Values: []string{""}, Free: "NAME", Doc: "the backend that boots the guest (Backends; the first, qemu, by default)"},
	{Name: OptionSource, Values: []string{""}, Free: "DIR", Doc: "a kernel source tree, built with ci/kernel.sh's guest config (cached) and booted as image= is",
		Note: "a kernel tree built for the guest and booted"},
	{Name: OptionBase, Values: []string{"", "6.1", "6.12"}, Doc: "Debian's linux-source of this version, built and booted as source= is"},
	{Name: OptionPatches, Values: []string{""}, Free: "DIR", Doc: "a series of *.patch files applied to source= or base= before the build"},
	{Name: OptionCPUs, Values: []string{""}, Free: "N", Doc: "the guest's vCPUs, 1-8 (default 2), with image=, source= or base= (docs/kernel-images.md)"},
}

func withNote(o ops.OptionSpec, note string) ops.OptionSpec {
	o.Note = note
	return o
}

// Release is the running kernel's release, "Linux <release>", or "" where
// it cannot be read.
func Release() string { return kernelRelease() }
