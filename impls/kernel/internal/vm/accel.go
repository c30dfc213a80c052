//go:build linux && amd64

package vm

import (
	"bytes"
	"os"
)

// EnvAccel names the environment variable that chooses the accelerator:
// "kvm" or "tcg"; unset, what Accel finds.
const EnvAccel = "IPCFUZZ_VM_ACCEL"

// Accel is how QEMU runs the guest: its name ("kvm" or "tcg") and its
// QEMU arguments.
type Accel struct {
	Name string
	Args []string
}

var (
	kvmAccel = Accel{Name: "kvm", Args: []string{"-accel", "kvm", "-cpu", "host"}}
	// TCG with one host thread per vCPU, and -cpu max: with an older
	// model the guest turns on page-table isolation, and every syscall
	// costs 35x (vm-probe.md §2).
	tcgAccel = Accel{Name: "tcg", Args: []string{"-accel", "tcg,thread=multi", "-cpu", "max"}}
)

// tcgFor is TCG's accelerator with the guest's CPU features that decide
// what a VMA shows made this machine's: protection keys (an execute-only
// mapping gets a key where the CPU has them, the exec-only-pkey quirk) are
// turned off in -cpu max where this CPU has none, so that a guest kernel
// compared with this machine's differs by its version, not by a CPU
// feature the emulator made up. cpuinfo is /proc/cpuinfo's text.
func tcgFor(cpuinfo []byte) Accel {
	if cpuFlag(cpuinfo, "pku") {
		return tcgAccel
	}
	a := tcgAccel
	a.Args = append([]string(nil), tcgAccel.Args...)
	a.Args[len(a.Args)-1] = "max,pku=off"
	return a
}

// cpuFlag reports whether the first "flags" line of cpuinfo lists flag.
func cpuFlag(cpuinfo []byte, flag string) bool {
	for _, line := range bytes.Split(cpuinfo, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("flags")) {
			continue
		}
		for _, f := range bytes.Fields(line) {
			if string(f) == flag {
				return true
			}
		}
		return false
	}
	return false
}

// hostTCG is tcgFor this machine's CPU.
func hostTCG() Accel {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	return tcgFor(cpuinfo)
}

// ChooseAccel is KVM where the CPU really has it: /dev/kvm opens, the CPU
// has vmx or svm, and /dev/kvm is not PVM (kvm_pvm runs only guests built
// for it: a stock kernel crawls or QEMU aborts, vm-probe.md §1); else TCG.
// EnvAccel overrides it.
func ChooseAccel() Accel {
	switch os.Getenv(EnvAccel) {
	case "kvm":
		return kvmAccel
	case "tcg":
		return hostTCG()
	}
	if kvmUsable() {
		return kvmAccel
	}
	return hostTCG()
}

func kvmUsable() bool {
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return false
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	return cpuFlag(cpuinfo, "vmx") || cpuFlag(cpuinfo, "svm")
}
