package kernel

import "github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/vm"

// The seam between a kernel side and the guest it runs in (package
// internal/vm): a backend boots a VMSpec into a VMGuest.
type (
	// VMSpec says what a backend boots (vm.Spec).
	VMSpec = vm.Spec
	// VMGuest is a booted guest whose plugin serves (vm.Guest).
	VMGuest = vm.Guest
	// VMBackend is one way to boot a guest (vm.Backend).
	VMBackend = vm.Backend
	// VMBackends is a table of backends, the first the default
	// (vm.Backends).
	VMBackends = vm.Backends
)

// Backends are the VM backends built in, QEMU first (the default of
// kernel:vm=).
func Backends() VMBackends { return VMBackends{QEMU()} }
