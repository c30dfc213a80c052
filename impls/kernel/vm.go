//go:build linux && amd64

package kernel

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/vm"
	kernelvma "github.com/ipcfuzz/ipcfuzz/impls/kernel/vma"
)

// The kernel side in a VM (package internal/vm): kernel:image=PATH boots
// the image in a guest (QEMU, the first of Backends) and serves this same
// adapter from the guest.

// guestCache is the guest's XDG_CACHE_HOME: the C helpers built on the
// host are put where the guest's adapter looks for them (they are named by
// a hash of their source, the same in the guest's binary).
const guestCache = "/cache"

// QEMU is the backend that boots the guest in QEMU, KVM where the CPU
// really has it and TCG otherwise.
func QEMU() VMBackend {
	return VMBackend{Name: "qemu", Doc: "QEMU, KVM where the CPU has it, else TCG", Boot: func(ctx context.Context, s VMSpec) (VMGuest, error) {
		v, err := BootVM(ctx, s)
		if err != nil {
			return nil, err
		}
		return v, nil
	}}
}

// VM is a guest whose kernel plugin serves.
type VM struct{ g *vm.QEMUGuest }

// BootVM builds the guest's initramfs, boots QEMU on the image and waits
// until the kernel plugin serves in the guest (ctx bounds it).
func BootVM(ctx context.Context, s VMSpec) (*VM, error) {
	img, err := vm.Resolve(ctx, s.Image, "")
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	if p, err := task.Server(); err == nil {
		files[filepath.Join(guestCache, "ipcfuzz", filepath.Base(p))] = p
	}
	if p, err := kernelvma.Build(ctx, kernelvma.Options{}); err == nil {
		files[filepath.Join(guestCache, "ipcfuzz", filepath.Base(p))] = p
	}
	g, err := vm.Boot(ctx, vm.Config{Image: img, Init: vm.StrippedInit(ctx, s.Init, ""), Files: files, Env: s.Env, Caps: s.Caps, Console: s.Console, CPUs: s.CPUs})
	if err != nil {
		return nil, fmt.Errorf("kernel image %s: %w", s.Image, err)
	}
	return &VM{g}, nil
}

// Addr is where the guest plugin's gRPC is reached.
func (v *VM) Addr() net.Addr { return v.g.Addr }

// Handshake is the guest plugin's go-plugin handshake line.
func (v *VM) Handshake() string { return v.g.Handshake }

// Pid is QEMU's pid (a process group leader).
func (v *VM) Pid() int { return v.g.Pid() }

// Wait waits for QEMU to exit.
func (v *VM) Wait() error { return v.g.Wait() }

// ProcessState is how QEMU ended, once Wait returned.
func (v *VM) ProcessState() *os.ProcessState { return v.g.Cmd().ProcessState }

// Slowdown is how many times slower than the host the guest runs.
func (v *VM) Slowdown() float64 { return v.g.Slowdown }

// Accel is how QEMU runs the guest: "kvm" or "tcg".
func (v *VM) Accel() string { return v.g.Accel }

// BootTime is the time from QEMU's start to the plugin serving.
func (v *VM) BootTime() time.Duration { return v.g.BootTime }

// Kill kills QEMU and waits for it.
func (v *VM) Kill() error { return v.g.Kill() }

// IsGuestInit reports whether this process is /init of a guest BootVM
// booted; GuestInit is then what it runs.
func IsGuestInit() bool { return vm.IsGuestInit() }

// GuestInit runs /init in the guest: the kernel plugin served on the
// guest's port. It never returns.
func GuestInit() {
	vm.GuestInit(vm.GuestConfig{
		Args:        []string{"plugin", "serve", "kernel"},
		Env:         os.Environ(),
		SlowdownEnv: task.EnvSlowdown,
		CacheDir:    guestCache,
	})
}

// Slowdown is how many times slower than natively this kernel runs (in a
// guest, what its init measured; else 1): the adapter's timeouts are
// multiplied by it.
func Slowdown() float64 { return task.Slowdown() }

// GuestNote says, in a guest BootVM booted, what the kernel side is: its
// release, the accelerator and the slowdown; "" elsewhere.
func GuestNote() string {
	accel := os.Getenv(vm.EnvGuestAccel)
	if accel == "" {
		return ""
	}
	return fmt.Sprintf("%s in a QEMU guest under %s, %.1fx slower than the host (timeouts scaled)", kernelRelease(), strings.ToUpper(accel), Slowdown())
}

// VMAccel is how this machine would run a guest: "kvm" or "tcg".
func VMAccel() string { return vm.ChooseAccel().Name }

// RunVM boots o.Image in QEMU with prog, a static program, run as the
// guest's only work, and returns how prog exited there (its status, or 128
// plus a signal). o.Init is the guest's /init as for BootVM; o.Console
// receives the console, prog's output among it. An error is the guest's,
// never prog's.
func RunVM(ctx context.Context, o VMSpec, prog string) (int, error) {
	img, err := vm.Resolve(ctx, o.Image, "")
	if err != nil {
		return 0, err
	}
	code, err := vm.Run(ctx, vm.Config{Image: img, Init: vm.StrippedInit(ctx, o.Init, ""), Env: o.Env, Console: o.Console}, prog)
	if err != nil {
		return 0, fmt.Errorf("kernel image %s: %w", o.Image, err)
	}
	return code, nil
}
