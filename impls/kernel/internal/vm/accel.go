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

// ChooseAccel is KVM where the CPU really has it: /dev/kvm opens, the CPU
// has vmx or svm, and /dev/kvm is not PVM (kvm_pvm runs only guests built
// for it: a stock kernel crawls or QEMU aborts, vm-probe.md §1); else TCG.
// EnvAccel overrides it.
func ChooseAccel() Accel {
	switch os.Getenv(EnvAccel) {
	case "kvm":
		return kvmAccel
	case "tcg":
		return tcgAccel
	}
	if kvmUsable() {
		return kvmAccel
	}
	return tcgAccel
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
	for _, line := range bytes.Split(cpuinfo, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("flags")) {
			continue
		}
		for _, f := range bytes.Fields(line) {
			if string(f) == "vmx" || string(f) == "svm" {
				return true
			}
		}
		return false
	}
	return false
}
