//go:build linux && amd64

package vm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// QEMU's command line: no default devices, the accelerator asked for, the
// initramfs from fd 3, the port on an abstract socket, the environment on
// the kernel's command line.
func TestQEMUArgs(t *testing.T) {
	c := Config{Image: &Image{Kernel: "/k/vmlinux"}}
	args := strings.Join(qemuArgs(c, tcgAccel, "ipcfuzz-vm-1-ab", []string{"A=1", "B=2"}), " ")
	for _, want := range []string{
		"-nodefaults ", "-accel tcg,thread=multi -cpu max", "-smp 2 -m 1024", "-kernel /k/vmlinux -initrd /dev/fd/3",
		"console=ttyS0 panic=-1 quiet mitigations=off no_timer_check rdinit=/init A=1 B=2",
		"socket,id=port0,path=ipcfuzz-vm-1-ab,abstract=on,server=on,wait=off",
		"virtserialport,chardev=port0,name=" + PortName,
	} {
		require.Contains(t, args, want)
	}
}

// A TCG guest has protection keys only where this machine's CPU has them:
// the exec-only-pkey quirk is the machine's, not the emulator's.
func TestTCGFollowsTheHostsProtectionKeys(t *testing.T) {
	with := []byte("processor\t: 0\nflags\t\t: fpu sse pku ospke avx\n")
	without := []byte("processor\t: 0\nflags\t\t: fpu sse avx\n")
	require.Equal(t, []string{"-accel", "tcg,thread=multi", "-cpu", "max"}, tcgFor(with).Args)
	require.Equal(t, []string{"-accel", "tcg,thread=multi", "-cpu", "max,pku=off"}, tcgFor(without).Args)
	require.Equal(t, []string{"-accel", "tcg,thread=multi", "-cpu", "max"}, tcgAccel.Args, "the table is not changed")
}

// IPCFUZZ_VM_ACCEL forces the accelerator; without it, KVM only where it
// is really usable (this machine's PVM /dev/kvm is not).
func TestChooseAccel(t *testing.T) {
	t.Setenv(EnvAccel, "kvm")
	require.Equal(t, "kvm", ChooseAccel().Name)
	t.Setenv(EnvAccel, "tcg")
	require.Equal(t, "tcg", ChooseAccel().Name)
	t.Setenv(EnvAccel, "")
	require.Equal(t, map[bool]string{true: "kvm", false: "tcg"}[kvmUsable()], ChooseAccel().Name)
}

// The ready line gives the slowdown (at least 1) and the handshake, as
// /init writes it.
func TestParseReady(t *testing.T) {
	slowdown, hs, err := parseReady(strings.TrimPrefix(readyLine(7.25, "1|2|unix|/tmp/plugin1|grpc|"), readyPrefix))
	require.NoError(t, err)
	require.Equal(t, 7.25, slowdown)
	require.Equal(t, "1|2|unix|/tmp/plugin1|grpc|", hs)
	slowdown, hs, err = parseReady("slowdown=0.5 handshake=x")
	require.NoError(t, err)
	require.Equal(t, 1.0, slowdown)
	require.Equal(t, "x", hs)
	_, _, err = parseReady("hello")
	require.Error(t, err)
}

// caps= travels to the guest once, as /init's environment, and only when
// asked.
func TestInitEnvCarriesCaps(t *testing.T) {
	require.Equal(t, []string{envInit + "=1", envHostCalib + "=42", EnvGuestAccel + "=tcg", "K=v"}, initEnv(42, "tcg", "", []string{"K=v"}))
	require.Contains(t, initEnv(42, "tcg", "sys_resource", nil), envCaps+"=sys_resource")
}

// The first backend is the default; an unknown name is refused, naming
// the known ones.
func TestBackendsLookup(t *testing.T) {
	table := Backends{{Name: "qemu"}, {Name: "fake"}}
	b, err := table.Lookup("")
	require.NoError(t, err)
	require.Equal(t, "qemu", b.Name)
	b, err = table.Lookup("fake")
	require.NoError(t, err)
	require.Equal(t, "fake", b.Name)
	_, err = table.Lookup("vng")
	require.EqualError(t, err, `no VM backend "vng" (known: qemu, fake)`)
}
