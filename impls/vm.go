package impls

import (
	"context"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
)

// OptionImage is the kernel's option that boots it in a QEMU guest from a
// kernel image (kernel:image=PATH): package kernel's VM.
const OptionImage = kernel.OptionImage

// The kernel's options that build the kernel a QEMU guest boots.
const (
	OptionSource  = kernel.OptionSource
	OptionBase    = kernel.OptionBase
	OptionPatches = kernel.OptionPatches
)

// VMOptions say what BootVM boots (kernel.VMOptions).
type VMOptions = kernel.VMOptions

// BootVM boots the kernel side in a QEMU guest (kernel.BootVM).
func BootVM(ctx context.Context, o VMOptions) (*kernel.VM, error) { return kernel.BootVM(ctx, o) }

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
func RunVM(ctx context.Context, o VMOptions, prog string) (int, error) {
	return kernel.RunVM(ctx, o, prog)
}
