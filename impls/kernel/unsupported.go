//go:build !(linux && amd64)

package kernel

import (
	"context"
	"fmt"
	"net"
	"os"
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

// QEMU is the backend that boots a guest in QEMU (unsupported here).
func QEMU() VMBackend {
	return VMBackend{Name: "qemu", Doc: "QEMU (needs linux/amd64)", Boot: func(ctx context.Context, s VMSpec) (VMGuest, error) {
		_, err := BootVM(ctx, s)
		return nil, err
	}}
}

// VM is a guest (never booted here).
type VM struct{}

// BootVM fails: booting a kernel image needs linux/amd64.
func BootVM(context.Context, VMSpec) (*VM, error) {
	return nil, fmt.Errorf("kernel image: not supported on %s/%s (needs linux/amd64)", runtime.GOOS, runtime.GOARCH)
}

// Addr, Handshake, Pid, Wait, ProcessState, Slowdown and Kill never run: no VM
// boots here.
func (*VM) Addr() net.Addr                 { return nil }
func (*VM) Handshake() string              { return "" }
func (*VM) Pid() int                       { return 0 }
func (*VM) Wait() error                    { return nil }
func (*VM) ProcessState() *os.ProcessState { return nil }
func (*VM) Slowdown() float64              { return 1 }
func (*VM) Kill() error                    { return nil }

// IsGuestInit is false here.
func IsGuestInit() bool { return false }

// GuestInit never runs here.
func GuestInit() {}

// Slowdown is 1 here.
func Slowdown() float64 { return 1 }

// GuestNote is "" here.
func GuestNote() string { return "" }

// VMAccel is "tcg" here (no guest boots).
func VMAccel() string { return "tcg" }

// RunVM fails: booting a kernel image needs linux/amd64.
func RunVM(context.Context, VMSpec, string) (int, error) {
	return 0, fmt.Errorf("kernel image: not supported on %s/%s (needs linux/amd64)", runtime.GOOS, runtime.GOARCH)
}

// Handles reports that the adapter runs no kind here.
func Handles(ops.Kind) bool { return false }
