package vm

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// A Backend boots a kernel in a guest and reaches the plugin /init serves
// there (the guest protocol: protocol.go). QEMU (package kernel's QEMU) is
// the first; a side chooses one with kernel:vm=NAME.

// Spec says what a backend boots.
type Spec struct {
	// Image is the kernel: a vmlinux, a bzImage or a Debian kernel
	// package (any path, commas and spaces included).
	Image string
	// Init is the ipcfuzz binary the guest runs as /init (static, or with
	// its libraries found here).
	Init string
	// Env are more "KEY=value" entries of the guest plugin's environment
	// (the plugin handshake's cookie).
	Env []string
	// Caps is the side's caps= value: ops.CapSysResource keeps
	// CAP_SYS_RESOURCE for the guest's root; "" or "none" drops it. It is
	// said here only: the guest's adapter is not given caps= again.
	Caps string
	// Console receives the guest's console.
	Console io.Writer
	// CPUs is the guest's vCPUs; 0: the backend's default (QEMU: 2).
	CPUs int
}

// Guest is a booted guest whose plugin serves: the connection, the
// process that runs it, and a way to stop it. It is what plugins/host
// calls Booted, and Kill.
type Guest interface {
	// Addr is where the plugin's gRPC is reached.
	Addr() net.Addr
	// Handshake is the plugin's go-plugin handshake line.
	Handshake() string
	// Pid is the process that runs the guest, leader of a process group of
	// its own.
	Pid() int
	// Wait waits for that process to exit.
	Wait() error
	// ProcessState is how it ended, once Wait returned.
	ProcessState() *os.ProcessState
	// Slowdown is how many times slower than the host the guest runs.
	Slowdown() float64
	// Kill stops the guest and waits for it.
	Kill() error
}

// Backend is one way to boot a guest.
type Backend struct {
	// Name is what kernel:vm= calls it.
	Name string
	// Doc says in a few words what it boots with.
	Doc string
	// Boot boots s and returns once the guest's plugin serves (ctx bounds
	// it); on an error nothing is left running.
	Boot func(ctx context.Context, s Spec) (Guest, error)
}

// Backends is a table of backends; the first is the default.
type Backends []Backend

// Lookup is the backend called name ("": the default); an unknown name is
// an error that names the known ones.
func (t Backends) Lookup(name string) (Backend, error) {
	if len(t) == 0 {
		return Backend{}, fmt.Errorf("no VM backend is built in")
	}
	if name == "" {
		return t[0], nil
	}
	for _, b := range t {
		if b.Name == name {
			return b, nil
		}
	}
	return Backend{}, fmt.Errorf("no VM backend %q (known: %s)", name, strings.Join(t.Names(), ", "))
}

// Names are the backends' names, in the table's order.
func (t Backends) Names() []string {
	out := make([]string, len(t))
	for i, b := range t {
		out[i] = b.Name
	}
	return out
}
