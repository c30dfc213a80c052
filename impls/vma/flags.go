package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Flags are a VMA's vm_flags. The low bits are those smaps names, at the
// positions of ops.VMAFlagNames; the permission bits and the protection key
// live above them.
type Flags uint64

// The flags the model uses (bit i is ops.VMAFlagNames[i]; TestFlagBits
// checks the table).
const (
	VMMayRead     Flags = 1 << 0  // mr
	VMMayWrite    Flags = 1 << 1  // mw
	VMMayExec     Flags = 1 << 2  // me
	VMMayShare    Flags = 1 << 3  // ms
	VMGrowsDown   Flags = 1 << 4  // gd
	VMPfnMap      Flags = 1 << 5  // pf
	VMMaybeGuard  Flags = 1 << 7  // gu
	VMLocked      Flags = 1 << 8  // lo
	VMIO          Flags = 1 << 9  // io
	VMSeqRead     Flags = 1 << 10 // sr
	VMRandRead    Flags = 1 << 11 // rr
	VMDontCopy    Flags = 1 << 12 // dc
	VMDontExpand  Flags = 1 << 13 // de
	VMAccount     Flags = 1 << 14 // ac
	VMNoReserve   Flags = 1 << 15 // nr
	VMHugeTLB     Flags = 1 << 16 // ht
	VMWipeOnFork  Flags = 1 << 20 // wf
	VMDontDump    Flags = 1 << 21 // dd
	VMMixedMap    Flags = 1 << 23 // mm
	VMHugePage    Flags = 1 << 24 // hg
	VMNoHugePage  Flags = 1 << 25 // nh
	VMMergeable   Flags = 1 << 26 // mg
	VMSealed      Flags = 1 << 33 // sl
	VMLockOnFault Flags = 1 << 34 // lf
	VMDroppable   Flags = 1 << 35 // dp

	VMRead   Flags = 1 << 56
	VMWrite  Flags = 1 << 57
	VMExec   Flags = 1 << 58
	VMShared Flags = 1 << 59
	// VMPkeyExecOnly: the VMA carries the execute-only protection key.
	VMPkeyExecOnly Flags = 1 << 60

	vmAccessFlags = VMRead | VMWrite | VMExec
	vmLockedMask  = VMLocked | VMLockOnFault
	// vmSpecial: no merge at all (VM_IO | VM_DONTEXPAND | VM_PFNMAP | VM_MIXEDMAP).
	vmSpecial = VMIO | VMDontExpand | VMPfnMap | VMMixedMap
	// vmDataDefault is VM_DATA_DEFAULT_FLAGS on x86-64 (brk).
	vmDataDefault = VMRead | VMWrite | VMMayRead | VMMayWrite | VMMayExec
	smapsMask     = Flags(1)<<smapsFlagBits - 1
	// smapsFlagBits is len(ops.VMAFlagNames) (checked by a test).
	smapsFlagBits = 37
)

// execOnlyPkey is the protection key the kernel hands out for execute-only
// mappings: the first one it allocates in an mm whose program allocated
// none.
const execOnlyPkey = 1

// protFlags turns a protection into VM_READ/WRITE/EXEC.
func protFlags(p ops.VMAProt) Flags {
	var f Flags
	if p&ops.ProtRead != 0 {
		f |= VMRead
	}
	if p&ops.ProtWrite != 0 {
		f |= VMWrite
	}
	if p&ops.ProtExec != 0 {
		f |= VMExec
	}
	return f
}

// perms is what maps shows of the flags.
func (f Flags) perms() ops.VMAPerms {
	var p ops.VMAPerms
	if f&VMRead != 0 {
		p |= ops.PermRead
	}
	if f&VMWrite != 0 {
		p |= ops.PermWrite
	}
	if f&VMExec != 0 {
		p |= ops.PermExec
	}
	if f&VMMayShare != 0 {
		p |= ops.PermShared
	}
	return p
}

// vmaIsAccessible: any of read, write, execute.
func (f Flags) vmaIsAccessible() bool { return f&vmAccessFlags != 0 }
