package impls

import (
	"context"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
)

// OptionImage is the kernel's option that boots it in a guest from a
// kernel image (kernel:image=PATH): package kernel's VM.
const OptionImage = kernel.OptionImage

// OptionVM is the kernel's option that names the backend booting its
// guest (kernel:vm=qemu,image=PATH).
const OptionVM = kernel.OptionVM

// OptionCPUs sizes the guest a kernel side boots (kernel.OptionCPUs), up
// to MaxGuestCPUs.
const (
	OptionCPUs   = kernel.OptionCPUs
	MaxGuestCPUs = kernel.MaxGuestCPUs
)

// VMOptions are the kernel's options that boot it in a guest
// (kernel.VMOptions): the boot's alone, never given to the guest's Reset.
func VMOptions() []string { return kernel.VMOptions() }

// The kernel's options that build the kernel a QEMU guest boots.
const (
	OptionSource  = kernel.OptionSource
	OptionBase    = kernel.OptionBase
	OptionPatches = kernel.OptionPatches
)

// The VM backend seam (kernel.VMBackend): a backend boots a VMSpec into a
// VMGuest whose plugin serves.
type (
	VMSpec     = kernel.VMSpec
	VMGuest    = kernel.VMGuest
	VMBackend  = kernel.VMBackend
	VMBackends = kernel.VMBackends
)

// DefaultVMBackends are the VM backends built in, QEMU first
// (kernel.Backends).
func DefaultVMBackends() VMBackends { return kernel.Backends() }

// IsGuestInit reports whether this process is /init of such a guest; its
// main must then run GuestInit and nothing else.
func IsGuestInit() bool { return kernel.IsGuestInit() }

// GuestInit serves the kernel side from the guest; it never returns.
func GuestInit() { kernel.GuestInit() }

// VMAccel is how this machine runs a guest for kernel:image=: "kvm" or
// "tcg".
func VMAccel() string { return kernel.VMAccel() }

// RunVM boots a kernel image with a static program as the guest's only
// work and returns how the program exited there (kernel.RunVM).
func RunVM(ctx context.Context, o VMSpec, prog string) (int, error) {
	return kernel.RunVM(ctx, o, prog)
}
