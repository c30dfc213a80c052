package ops

import (
	"fmt"
	"strconv"
	"strings"
)

// The VMA group of the vocabulary (mm/vma.c and the syscalls around it:
// mmap, munmap, mprotect, mremap, brk, madvise, mlock, page faults).
//
// Every address and length is a number of pages. Addresses are relative to
// one of three regions: the window (a fixed range the kernel adapter keeps
// far from everything else), the heap area (the pages at and above the
// initial program break) or the THP area (a range aligned to 2 MiB and two
// PMDs long, where a mapping can hold a PMD-mapped transparent huge page).
// A VMA never spans two, and no operation moves one from a region to
// another.

// Sizes of the regions, in pages.
const (
	// VMAWindowPages is the size of the window: room for a few dozen VMAs,
	// small enough that a snapshot costs little.
	VMAWindowPages = 64
	// VMAHeapPages is how far above the initial break scripts may map,
	// protect or grow the heap.
	VMAHeapPages = 32
	// VMATHPPages is the size of the THP area: two 2 MiB-aligned halves of
	// 512 pages, each what one PMD maps.
	VMATHPPages = 1024
	// VMABrkBelow is how far below the initial break a brk may ask to go
	// (such a request fails: the break never goes below its start).
	VMABrkBelow = 2
	// VMAFilePages is the size every file is created with; a mapping may
	// reach past it (up to VMAFileOffsetMax) and touching such a page fails.
	VMAFilePages = 64
	// VMAFileOffsetMax bounds the end of a file mapping: offset + pages.
	VMAFileOffsetMax = 2 * VMAFilePages
	// VMAMaxHandles is the largest file handle a script may bind.
	VMAMaxHandles = 8
	// VMAPageBytes is the page size: a break may lie inside a page.
	VMAPageBytes = 4096
)

// VMAProt is a protection: PROT_READ, PROT_WRITE, PROT_EXEC (same bits).
type VMAProt uint8

// The protection bits.
const (
	ProtRead  VMAProt = 1 << iota // PROT_READ
	ProtWrite                     // PROT_WRITE
	ProtExec                      // PROT_EXEC
)

// String writes "rw-" style text.
func (p VMAProt) String() string {
	b := []byte("---")
	for i, c := range "rwx" {
		if p&(1<<i) != 0 {
			b[i] = byte(c)
		}
	}
	return string(b)
}

// ParseVMAProt reads "rw-" style text.
func ParseVMAProt(s string) (VMAProt, error) {
	if len(s) != 3 {
		return 0, fmt.Errorf("protection %q: want three of r, w, x or -", s)
	}
	var p VMAProt
	for i, c := range "rwx" {
		switch s[i] {
		case byte(c):
			p |= 1 << i
		case '-':
		default:
			return 0, fmt.Errorf("protection %q: want three of r, w, x or -", s)
		}
	}
	return p, nil
}

// VMAMapFlags are the mmap flags a script may add to MAP_FIXED and
// MAP_PRIVATE (or MAP_SHARED).
type VMAMapFlags uint8

// The mmap flags.
const (
	MapShared    VMAMapFlags = 1 << iota // MAP_SHARED instead of MAP_PRIVATE
	MapNoReserve                         // MAP_NORESERVE
	MapPopulate                          // MAP_POPULATE
	MapLocked                            // MAP_LOCKED
	MapStack                             // MAP_STACK
)

var mapFlagNames = []struct {
	bit  VMAMapFlags
	name string
}{{MapShared, "shared"}, {MapNoReserve, "noreserve"}, {MapPopulate, "populate"}, {MapLocked, "locked"}, {MapStack, "stack"}}

// String writes the flags as names joined by commas ("-" for none).
func (f VMAMapFlags) String() string {
	var parts []string
	for _, n := range mapFlagNames {
		if f&n.bit != 0 {
			parts = append(parts, n.name)
		}
	}
	return nameList(parts)
}

// nameList writes names joined by commas, "-" for none: the text of a set
// of flags, quirks or facts.
func nameList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// nameListItems returns the names of text written by nameList (none for
// "-").
func nameListItems(text string) []string {
	if text == "-" {
		return nil
	}
	return strings.Split(text, ",")
}

// ParseVMAMapFlags reads text written by VMAMapFlags.String.
func ParseVMAMapFlags(s string) (VMAMapFlags, error) {
	var f VMAMapFlags
	for _, part := range nameListItems(s) {
		bit, ok := VMAMapFlags(0), false
		for _, n := range mapFlagNames {
			if n.name == part {
				bit, ok = n.bit, true
			}
		}
		if !ok || f&bit != 0 {
			return 0, fmt.Errorf("mmap flags %q: unknown or repeated %q", s, part)
		}
		f |= bit
	}
	return f, nil
}

// VMAAdvice is a madvise advice. The flag-changing ones split and merge
// VMAs; DontNeed, the guard advices and the page advices (WillNeed, Cold,
// PageOut, Free, DontNeedLocked) do not, but each refuses some VMAs.
type VMAAdvice uint8

// The advices.
const (
	AdviceNormal         VMAAdvice = iota + 1 // MADV_NORMAL: clear rr and sr
	AdviceRandom                              // MADV_RANDOM: set rr, clear sr
	AdviceSequential                          // MADV_SEQUENTIAL: set sr, clear rr
	AdviceDontFork                            // MADV_DONTFORK: set dc
	AdviceDoFork                              // MADV_DOFORK: clear dc
	AdviceDontDump                            // MADV_DONTDUMP: set dd
	AdviceDoDump                              // MADV_DODUMP: clear dd
	AdviceHugePage                            // MADV_HUGEPAGE: set hg, clear nh
	AdviceNoHugePage                          // MADV_NOHUGEPAGE: set nh, clear hg
	AdviceWipeOnFork                          // MADV_WIPEONFORK: set wf (private anonymous only)
	AdviceKeepOnFork                          // MADV_KEEPONFORK: clear wf
	AdviceMergeable                           // MADV_MERGEABLE: set mg (KSM)
	AdviceUnmergeable                         // MADV_UNMERGEABLE: clear mg
	AdviceDontNeed                            // MADV_DONTNEED: drops pages, never the layout
	AdviceGuardInstall                        // MADV_GUARD_INSTALL: guard markers, gu on the VMA
	AdviceGuardRemove                         // MADV_GUARD_REMOVE: removes the markers, keeps gu
	AdviceWillNeed                            // MADV_WILLNEED: reads ahead; legal on every VMA
	AdviceCold                                // MADV_COLD: deactivates pages (not locked VMAs)
	AdvicePageOut                             // MADV_PAGEOUT: reclaims pages (not locked VMAs)
	AdviceFree                                // MADV_FREE: lazy free (private anonymous, unlocked VMAs only)
	AdviceDontNeedLocked                      // MADV_DONTNEED_LOCKED: DONTNEED that locked VMAs take too
	AdviceRemove                              // MADV_REMOVE: punches a hole in the file of a shared writable mapping
	AdvicePopulateRead                        // MADV_POPULATE_READ: faults the pages in readable
	AdvicePopulateWrite                       // MADV_POPULATE_WRITE: faults the pages in writable
)

var adviceNames = []string{
	AdviceNormal: "normal", AdviceRandom: "random", AdviceSequential: "sequential",
	AdviceDontFork: "dontfork", AdviceDoFork: "dofork", AdviceDontDump: "dontdump", AdviceDoDump: "dodump",
	AdviceHugePage: "hugepage", AdviceNoHugePage: "nohugepage", AdviceWipeOnFork: "wipeonfork",
	AdviceKeepOnFork: "keeponfork", AdviceMergeable: "mergeable", AdviceUnmergeable: "unmergeable",
	AdviceDontNeed: "dontneed", AdviceGuardInstall: "guard_install", AdviceGuardRemove: "guard_remove",
	AdviceWillNeed: "willneed", AdviceCold: "cold", AdvicePageOut: "pageout", AdviceFree: "free",
	AdviceDontNeedLocked: "dontneed_locked", AdviceRemove: "remove",
	AdvicePopulateRead: "populate_read", AdvicePopulateWrite: "populate_write",
}

// VMAAdvices lists every advice in a fixed order.
var VMAAdvices = func() []VMAAdvice {
	out := make([]VMAAdvice, 0, len(adviceNames)-1)
	for a := AdviceNormal; int(a) < len(adviceNames); a++ {
		out = append(out, a)
	}
	return out
}()

// String returns the advice's name ("dontdump").
func (a VMAAdvice) String() string {
	if int(a) < len(adviceNames) && adviceNames[a] != "" {
		return adviceNames[a]
	}
	return fmt.Sprintf("advice%d", uint8(a))
}

// ParseVMAAdvice reads an advice name.
func ParseVMAAdvice(s string) (VMAAdvice, error) {
	for _, a := range VMAAdvices {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown advice %q", s)
}

// VMAArgs are the arguments of every VMA operation; each operation reads
// the fields it needs (see AddressSpace) and ignores the others.
type VMAArgs struct {
	// Heap: Start and Target are pages above the initial break, not pages
	// above the window base.
	Heap bool
	// Start and Pages are the range [Start, Start+Pages).
	Start, Pages int64
	// Prot is the protection of Map and Protect.
	Prot VMAProt
	// Flags are Map's mmap flags.
	Flags VMAMapFlags
	// File is Map's file handle (0: anonymous) and Offset its page offset.
	File   int
	Offset int64
	// Write: Touch writes the page Start (else it reads it).
	Write bool
	// Advice is Advise's advice.
	Advice VMAAdvice
	// OnFault: Lock is mlock2(MLOCK_ONFAULT) rather than mlock.
	OnFault bool
	// NewPages is Remap's new length. With Fixed, Remap is
	// MREMAP_MAYMOVE|MREMAP_FIXED to Target; without, it resizes in place.
	NewPages int64
	Fixed    bool
	Target   int64
	// MayMove: Remap is MREMAP_MAYMOVE without MREMAP_FIXED, of a window
	// range: the kernel picks the new address when it cannot resize in
	// place (AddressSpace.RemapMayMove).
	MayMove bool
	// Break is Brk's new break, in pages above the initial break, and
	// BreakBytes (0..VMAPageBytes-1) bytes more.
	Break int64
	// BreakBytes: see Break.
	BreakBytes int64
	// Limit is Memlock's limit of locked memory, in pages
	// (0..VMAMemlockMax).
	Limit int64
	// THP: Start and Target are pages of the THP area (never with Heap).
	THP bool
	// DontUnmap: Remap adds MREMAP_DONTUNMAP: the pages move to the
	// target (Fixed) or where the kernel picks (MayMove) and the source
	// range stays mapped, emptied and unlocked. The kernel refuses it
	// (EINVAL) without one of the two or with NewPages != Pages.
	DontUnmap bool
}

// VMAMemlockMax is the largest limit a memlock sets: every page of the
// regions.
const VMAMemlockMax = VMAHeapPages + VMAWindowPages + VMATHPPages

// VMARegion is the region a range or a VMA lies in.
type VMARegion uint8

// The regions.
const (
	RegionWindow VMARegion = iota
	RegionHeap
	RegionTHP
	// regionBoth is the region of a VMA or range said to be in the heap
	// area and the THP area at once: an implementation's bug, written
	// "h+t:" so that equality sees it.
	regionBoth
)

// Region returns the region of the arguments' ranges.
func (a VMAArgs) Region() VMARegion { return regionOf(a.Heap, a.THP) }

// Region returns the region the VMA lies in.
func (v VMA) Region() VMARegion { return regionOf(v.Heap, v.THP) }

func regionOf(heap, thp bool) VMARegion {
	switch {
	case heap && thp:
		return regionBoth
	case heap:
		return RegionHeap
	case thp:
		return RegionTHP
	}
	return RegionWindow
}

// SetRegion sets Heap and THP for r.
func (a *VMAArgs) SetRegion(r VMARegion) { a.Heap, a.THP = r == RegionHeap, r == RegionTHP }

// VMAFileArgs are the arguments of Open, Reopen and Dup: the handle they
// bind, the handle they derive it from (Reopen, Dup) and whether the new
// open file description is read-only (Open, Reopen).
type VMAFileArgs struct {
	Handle, Of int
	ReadOnly   bool
}

// AddressSpace is one process address space as both sides see it: the
// models and the kernel adapter implement it. Each operation returns the
// errno the syscall returned (OK on success) and an error only when the
// implementation itself failed.
//
//   - Map: mmap(Start, Pages, Prot, MAP_FIXED|Flags, File, Offset).
//   - Unmap: munmap(Start, Pages).
//   - Protect: mprotect(Start, Pages, Prot).
//   - Touch: one access to page Start, a write if Write, made as the kernel
//     makes one on the process's behalf (uaccess): the fault is handled as
//     the process's own would be, and one the process would get SIGSEGV or
//     SIGBUS for is EFAULT.
//   - Advise: madvise(Start, Pages, Advice).
//   - Lock: mlock(Start, Pages), or mlock2(..., MLOCK_ONFAULT) if OnFault.
//   - Unlock: munlock(Start, Pages).
//   - Remap: mremap(Start, Pages, NewPages, flags, Target).
//   - Brk: brk(Break pages and BreakBytes); a request the kernel refuses (it returns the old
//     break) is ENOMEM.
//   - Open: a new file of VMAFilePages pages; Reopen: a new open file
//     description of the file behind Of; Dup: dup(Of). A handle that is not
//     open is EBADF (errno 9).
//   - Fork: fork(); the space is the child's from then on (the parent
//     exits).
//   - Memlock: setrlimit(RLIMIT_MEMLOCK) to Limit pages, and CAP_IPC_LOCK
//     out of the effective capabilities, until Reset.
type AddressSpace interface {
	Map(a VMAArgs) (Errno, error)
	Unmap(a VMAArgs) (Errno, error)
	Protect(a VMAArgs) (Errno, error)
	Touch(a VMAArgs) (Errno, error)
	Advise(a VMAArgs) (Errno, error)
	Lock(a VMAArgs) (Errno, error)
	Unlock(a VMAArgs) (Errno, error)
	Remap(a VMAArgs) (Errno, error)
	Brk(a VMAArgs) (Errno, error)
	Open(f VMAFileArgs) (Errno, error)
	Reopen(f VMAFileArgs) (Errno, error)
	Dup(f VMAFileArgs) (Errno, error)
	// Seal is mseal(Start, Pages, 0); ENOSYS where the kernel has no
	// mseal (QuirkMseal unset).
	Seal(a VMAArgs) (Errno, error)
	// RemapMayMove is mremap(Start, Pages, NewPages, MREMAP_MAYMOVE): it
	// returns the page of the window the range is at afterwards (where it
	// was, or where get_unmapped_area put it: the top of the highest gap of
	// the window that fits, nothing above the window being free). A range
	// that lands below the window, wholly or in part, is unmapped at once,
	// and its page is negative.
	RemapMayMove(a VMAArgs) (at int64, e Errno, err error)
	Fork() (Errno, error)
	Memlock(a VMAArgs) (Errno, error)
	// State is the observable: every VMA of the three regions and the break.
	State() (VMAState, error)
	// Reset returns to the initial state: the regions empty, the break at
	// its start, no file open.
	Reset() error
	Close() error
}

// VMARegionLimit is the end of a region, in pages.
func VMARegionLimit(r VMARegion) int64 {
	switch r {
	case RegionHeap:
		return VMAHeapPages
	case RegionTHP:
		return VMATHPPages
	}
	return VMAWindowPages
}

// CheckVMARange reports whether [start, start+pages) lies inside the region.
func CheckVMARange(r VMARegion, start, pages int64) error {
	return CheckVMARangeIn(r, start, pages, VMAWindowPages)
}

// CheckVMARangeIn is CheckVMARange with a window of window pages (a model
// measuring a pattern whose body grows the address space: VMAPatternPages).
func CheckVMARangeIn(r VMARegion, start, pages, window int64) error {
	limit := VMARegionLimit(r)
	if r == RegionWindow {
		limit = window
	}
	if start < 0 || pages < 0 || start+pages > limit {
		return fmt.Errorf("range %d+%d pages leaves the %s (0..%d)", start, pages, regionName(r), limit)
	}
	return nil
}

// CheckVMAArgs validates the arguments a script may give an operation: every
// range stays inside its region, so that no implementation ever touches an
// address outside the three regions.
func CheckVMAArgs(a VMAArgs) error { return CheckVMAArgsIn(a, VMAWindowPages) }

// CheckVMAArgsIn is CheckVMAArgs with a window of window pages.
func CheckVMAArgsIn(a VMAArgs, window int64) error {
	if a.Heap && a.THP {
		return fmt.Errorf("a range in the heap area and the THP area at once")
	}
	if err := CheckVMARangeIn(a.Region(), a.Start, a.Pages, window); err != nil {
		return err
	}
	if a.File < 0 || a.File > VMAMaxHandles {
		return fmt.Errorf("file handle %d: want 0..%d", a.File, VMAMaxHandles)
	}
	if a.Offset < 0 || (a.File != 0 || a.Offset != 0) && a.Offset+a.Pages > VMAFileOffsetMax {
		return fmt.Errorf("file offset %d+%d pages: want at most %d", a.Offset, a.Pages, VMAFileOffsetMax)
	}
	if err := CheckVMARangeIn(a.Region(), a.Start, a.NewPages, window); err != nil {
		return fmt.Errorf("new length: %w", err)
	}
	if a.Fixed {
		if err := CheckVMARangeIn(a.Region(), a.Target, a.NewPages, window); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	if a.MayMove && (a.Fixed || a.Region() != RegionWindow) {
		return fmt.Errorf("maymove: want a window range and no fixed target")
	}
	if a.Break < -VMABrkBelow || a.Break > VMAHeapPages {
		return fmt.Errorf("break %d: want %d..%d", a.Break, -VMABrkBelow, VMAHeapPages)
	}
	if a.Limit < 0 || a.Limit > VMAMemlockMax {
		return fmt.Errorf("memlock limit %d: want 0..%d pages", a.Limit, VMAMemlockMax)
	}
	if a.BreakBytes < 0 || a.BreakBytes >= VMAPageBytes || (a.Break == VMAHeapPages && a.BreakBytes != 0) {
		return fmt.Errorf("break %d pages and %d bytes: want 0..%d bytes, and no bytes past page %d", a.Break, a.BreakBytes, VMAPageBytes-1, VMAHeapPages)
	}
	return nil
}

// CheckVMAFileArgs validates file handle arguments.
func CheckVMAFileArgs(f VMAFileArgs) error {
	if f.Handle < 1 || f.Handle > VMAMaxHandles || f.Of < 0 || f.Of > VMAMaxHandles {
		return fmt.Errorf("file handles %d, %d: want 1..%d", f.Handle, f.Of, VMAMaxHandles)
	}
	return nil
}

func regionName(r VMARegion) string {
	switch r {
	case RegionHeap:
		return "heap area"
	case RegionTHP:
		return "THP area"
	}
	return "window"
}

// VMAPerms are the permissions maps shows: r, w, x and shared or private.
type VMAPerms uint8

// The permission bits.
const (
	PermRead VMAPerms = 1 << iota
	PermWrite
	PermExec
	PermShared // 's' (VM_MAYSHARE) rather than 'p'
)

// String writes maps' four characters ("rw-p").
func (p VMAPerms) String() string {
	b := []byte("---p")
	for i, c := range "rwx" {
		if p&(1<<i) != 0 {
			b[i] = byte(c)
		}
	}
	if p&PermShared != 0 {
		b[3] = 's'
	}
	return string(b)
}

// ParseVMAPerms reads maps' four characters.
func ParseVMAPerms(s string) (VMAPerms, error) {
	if len(s) != 4 || (s[3] != 'p' && s[3] != 's') {
		return 0, fmt.Errorf("permissions %q: want four characters like rw-p", s)
	}
	prot, err := ParseVMAProt(s[:3])
	if err != nil {
		return 0, fmt.Errorf("permissions %q: %w", s, err)
	}
	p := VMAPerms(prot)
	if s[3] == 's' {
		p |= PermShared
	}
	return p, nil
}

// VMAFlags is the smaps VmFlags set without the mnemonics that repeat the
// permissions (rd, wr, ex, sh). Bit i is VMAFlagNames[i].
type VMAFlags uint64

// VMAFlagNames are the VmFlags mnemonics in their canonical order (the
// order show_smap_vma_flags prints them in), then VMAFlagUnnamed.
var VMAFlagNames = []string{
	"mr", "mw", "me", "ms", "gd", "pf", "dw", "gu", "lo", "io", "sr", "rr", "dc", "de", "ac", "nr",
	"ht", "sf", "nl", "ar", "wf", "dd", "sd", "mm", "hg", "nh", "mg", "bt", "mt", "um", "uw", "ui",
	"ss", "sl", "lf", "dp", VMAFlagUnnamed,
}

// VMAFlagUnnamed stands for a flag without a name of this table: what a
// kernel prints for a flag its own table does not name (6.1 prints "??"
// for VM_LOCKONFAULT, which 6.18 calls "lf"), or a name newer than this
// build. A kernel's VmFlags are read with any names (the kernel adapter
// maps the unknown ones to it).
const VMAFlagUnnamed = "??"

// VMAPermMnemonics are the VmFlags mnemonics VMAFlags leaves out because
// the permissions already show them.
var VMAPermMnemonics = []string{"rd", "wr", "ex", "sh"}

// VMAFlag returns the bit of a mnemonic ("ac"), or false.
func VMAFlag(mnemonic string) (VMAFlags, bool) {
	for i, n := range VMAFlagNames {
		if n == mnemonic {
			return 1 << i, true
		}
	}
	return 0, false
}

// MustVMAFlags returns the bits of space-separated mnemonics; it panics on
// an unknown one (for constants and tests).
func MustVMAFlags(mnemonics string) VMAFlags {
	f, err := ParseVMAFlags(strings.ReplaceAll(mnemonics, " ", ","))
	if err != nil {
		panic(err)
	}
	return f
}

// String writes the mnemonics joined by commas, "-" for none.
func (f VMAFlags) String() string {
	var parts []string
	for i, n := range VMAFlagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if f>>len(VMAFlagNames) != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint64(f>>len(VMAFlagNames))<<len(VMAFlagNames)))
	}
	return nameList(parts)
}

// ParseVMAFlags reads text written by VMAFlags.String.
func ParseVMAFlags(s string) (VMAFlags, error) {
	var f VMAFlags
	for _, part := range nameListItems(s) {
		if rest, ok := strings.CutPrefix(part, "0x"); ok {
			v, err := strconv.ParseUint(rest, 16, 64)
			if err != nil || v&(1<<len(VMAFlagNames)-1) != 0 {
				return 0, fmt.Errorf("vm flags %q: bad extra bits %q", s, part)
			}
			f |= VMAFlags(v)
			continue
		}
		bit, ok := VMAFlag(part)
		if !ok {
			return 0, fmt.Errorf("vm flags %q: unknown mnemonic %q", s, part)
		}
		f |= bit
	}
	return f, nil
}

// VMA is one observed VMA.
type VMA struct {
	// Heap: the VMA lies in the heap area (Start and End are pages above
	// the initial break), not in the window.
	Heap       bool
	Start, End int64
	Perms      VMAPerms
	// File is the identity of the file mapped: the n-th file a script
	// opened is n, whatever handle or description maps it; 0 for none.
	File int
	// Shm is the identity of the shmem object behind a shared anonymous
	// mapping: numbered 1, 2, ... in the order the VMAs of a state first
	// show them (each such mmap makes an object of its own); 0 for none.
	Shm int
	// Offset is the page offset (vm_pgoff) of a file or shmem VMA; maps
	// shows 0 for a private anonymous VMA, and so is it here.
	Offset int64
	// HeapLabel: maps names the VMA "[heap]".
	HeapLabel bool
	// Pkey is the protection key (smaps ProtectionKey), 0 by default.
	Pkey  int
	Flags VMAFlags
	// THP: the VMA lies in the THP area.
	THP bool
}

// VMAState is the observable state of an address space.
type VMAState struct {
	// VMAs are the window's VMAs in address order, then the heap area's.
	VMAs []VMA
	// Brk is the program break, in pages above the initial break, and
	// BrkBytes (0..VMAPageBytes-1) bytes more: the kernel keeps a break
	// as brk() was given it, page-aligned or not.
	Brk int64
	// BrkBytes: see Brk.
	BrkBytes int64
}

// ObserveVMAs is the VMAs field of a state: each of vmas (in address
// order) as observe shows it, the window's, then the heap area's, then
// the THP area's, nil when there are none. Every address space writes its
// state through it, so the canonical order is said once.
func ObserveVMAs[V any](vmas []V, observe func(V) (VMA, error)) ([]VMA, error) {
	var regions [regionBoth + 1][]VMA
	n := 0
	for _, v := range vmas {
		o, err := observe(v)
		if err != nil {
			return nil, err
		}
		regions[o.Region()] = append(regions[o.Region()], o)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]VMA, 0, n)
	for _, r := range regions {
		out = append(out, r...)
	}
	return out, nil
}

// formatBrk writes a break: "N" pages, or "N+B" with B bytes more.
func formatBrk(pages, bytes int64) string {
	if bytes == 0 {
		return strconv.FormatInt(pages, 10)
	}
	return strconv.FormatInt(pages, 10) + "+" + strconv.FormatInt(bytes, 10)
}

// parseBrk reads text written by formatBrk.
func parseBrk(s string) (pages, bytes int64, err error) {
	p, b, hasBytes := strings.Cut(s, "+")
	pages, err = strconv.ParseInt(p, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("brk=%q: want N or N+BYTES", clip(s))
	}
	if hasBytes {
		bytes, err = strconv.ParseInt(b, 10, 64)
		if err != nil || bytes <= 0 || bytes >= VMAPageBytes {
			return 0, 0, fmt.Errorf("brk=%q: want N+BYTES with BYTES in 1..%d", clip(s), VMAPageBytes-1)
		}
	}
	return pages, bytes, nil
}

// FormatVMA writes one VMA as a line:
//
//	w:0-4 rw-p anon mr,mw,me,ac
//	h:0-2 rw-p anon [heap] mr,mw,me,ac
//	w:4-8 r--s f1+0 mr,me,ms
//	w:8-9 rw-s z1+3 mr,mw,me,ms
//	w:9-10 --xp anon pkey=1 mr,mw,me
//
// region:start-end, the permissions, the backing (anon; fN+offset for file
// N; zN+offset for shmem object N), [heap] if labelled, pkey=N if not 0,
// and the VmFlags mnemonics ("-" for none).
func FormatVMA(v VMA) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d-%d %s %s", regionPrefix(v.Region()), v.Start, v.End, v.Perms, formatBacking(v))
	if v.HeapLabel {
		b.WriteString(" [heap]")
	}
	if v.Pkey != 0 {
		fmt.Fprintf(&b, " pkey=%d", v.Pkey)
	}
	b.WriteString(" " + v.Flags.String())
	return b.String()
}

func formatBacking(v VMA) string {
	switch {
	case v.File != 0 && v.Shm != 0:
		return fmt.Sprintf("f%d/z%d+%d", v.File, v.Shm, v.Offset)
	case v.File != 0:
		return fmt.Sprintf("f%d+%d", v.File, v.Offset)
	case v.Shm != 0:
		return fmt.Sprintf("z%d+%d", v.Shm, v.Offset)
	case v.Offset != 0:
		return fmt.Sprintf("anon+%d", v.Offset)
	}
	return "anon"
}

// ParseVMA reads a line written by FormatVMA.
func ParseVMA(line string) (VMA, error) {
	var v VMA
	f := strings.Fields(line)
	if len(f) < 4 {
		return v, fmt.Errorf("vma %q: want region:start-end perms backing [heap] [pkey=N] flags", line)
	}
	if err := parseVMARange(&v, f[0]); err != nil {
		return v, fmt.Errorf("vma %q: %w", line, err)
	}
	perms, err := ParseVMAPerms(f[1])
	if err != nil {
		return v, fmt.Errorf("vma %q: %w", line, err)
	}
	v.Perms = perms
	if err := parseBacking(&v, f[2]); err != nil {
		return v, fmt.Errorf("vma %q: %w", line, err)
	}
	rest := f[3:]
	if rest[0] == "[heap]" {
		v.HeapLabel, rest = true, rest[1:]
	}
	if len(rest) > 0 {
		if k, ok := strings.CutPrefix(rest[0], "pkey="); ok {
			n, err := strconv.Atoi(k)
			if err != nil || n == 0 {
				return v, fmt.Errorf("vma %q: bad %q", line, rest[0])
			}
			v.Pkey, rest = n, rest[1:]
		}
	}
	if len(rest) != 1 {
		return v, fmt.Errorf("vma %q: want the flags last", line)
	}
	if v.Flags, err = ParseVMAFlags(rest[0]); err != nil {
		return v, fmt.Errorf("vma %q: %w", line, err)
	}
	return v, nil
}

func parseVMARange(v *VMA, s string) error {
	region, rng, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return fmt.Errorf("want region:start-end, got %q", s)
	case region == "h":
		v.Heap = true
	case region == "t":
		v.THP = true
	case region != "w":
		return fmt.Errorf("region %q: want w, h or t", region)
	}
	a, b, ok := cutRange(rng)
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("range %q: want start-end in pages", rng)
	}
	v.Start, v.End = start, end
	return nil
}

// cutRange splits "start-end" at the dash after the start, which may be
// negative itself.
func cutRange(s string) (start, end string, ok bool) {
	if s == "" {
		return "", "", false
	}
	i := strings.IndexByte(s[1:], '-')
	if i < 0 {
		return "", "", false
	}
	return s[:i+1], s[i+2:], true
}

func parseBacking(v *VMA, s string) error {
	id, off, hasOff := strings.Cut(s, "+")
	if hasOff {
		n, err := strconv.ParseInt(off, 10, 64)
		if err != nil || (id == "anon" && n == 0) {
			return fmt.Errorf("backing %q: bad offset", s)
		}
		v.Offset = n
	}
	if id == "anon" {
		return nil
	}
	if !hasOff {
		return fmt.Errorf("backing %q: want anon, fN+off, zN+off or fN/zM+off", s)
	}
	for _, part := range strings.Split(id, "/") {
		if len(part) < 2 {
			return fmt.Errorf("backing %q: bad object %q", s, part)
		}
		n, err := strconv.Atoi(part[1:])
		if err != nil || n == 0 {
			return fmt.Errorf("backing %q: bad object %q", s, part)
		}
		switch {
		case part[0] == 'f' && v.File == 0 && v.Shm == 0:
			v.File = n
		case part[0] == 'z' && v.Shm == 0:
			v.Shm = n
		default:
			return fmt.Errorf("backing %q: bad object %q", s, part)
		}
	}
	return nil
}

// FormatVMAState writes a state: "brk=N" then one line per VMA.
func FormatVMAState(s VMAState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "brk=%s\n", formatBrk(s.Brk, s.BrkBytes))
	for _, v := range s.VMAs {
		b.WriteString(FormatVMA(v))
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseVMAState reads text written by FormatVMAState.
func ParseVMAState(text string) (VMAState, error) {
	var s VMAState
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	v, ok := strings.CutPrefix(lines[0], "brk=")
	brk, bytes, err := parseBrk(v)
	if !ok || err != nil {
		return s, fmt.Errorf("vma state: want brk=N or brk=N+BYTES first, got %q", lines[0])
	}
	s.Brk, s.BrkBytes = brk, bytes
	for _, l := range lines[1:] {
		vma, err := ParseVMA(l)
		if err != nil {
			return s, err
		}
		s.VMAs = append(s.VMAs, vma)
	}
	return s, nil
}

// VMAQuirks are the version-dependent rules a kernel follows, as the kernel
// adapter finds them by probing (and the models are configured with).
type VMAQuirks uint32

// The quirks.
const (
	// QuirkAnonMergeFix: 879bca0a2c4f (6.16): a faulted range may merge
	// into an unfaulted neighbour.
	QuirkAnonMergeFix VMAQuirks = 1 << iota
	// QuirkStickyGuard: MADV_GUARD_INSTALL sets VM_MAYBE_GUARD (gu), merges
	// ignore it and keep it (6.18.37+, 6.19).
	QuirkStickyGuard
	// QuirkGuardRegions: MADV_GUARD_INSTALL exists (6.13).
	QuirkGuardRegions
	// QuirkAccountDrop: mprotect to non-writable drops VM_ACCOUNT from an
	// unfaulted anonymous VMA (about 6.7).
	QuirkAccountDrop
	// QuirkStackNoHuge: MAP_STACK sets VM_NOHUGEPAGE (6.7).
	QuirkStackNoHuge
	// QuirkExecOnlyPkey: x86 protection keys: a PROT_EXEC-only mapping gets
	// the execute-only key, which also forbids reading it.
	QuirkExecOnlyPkey
	// QuirkKSM: MADV_MERGEABLE is available.
	QuirkKSM
	// QuirkTHP: MADV_HUGEPAGE is available.
	QuirkTHP
	// QuirkMultiMove: a MREMAP_FIXED move that keeps the size may span
	// several VMAs (6.17).
	QuirkMultiMove
	// QuirkForkChildRemap: the mremap merge refuses a fork-child source too
	// (61f67c230a5e follow-up, 6.19 and 6.18.y), probed in a forked child.
	QuirkForkChildRemap
	// QuirkSoftDirty: every VMA shows sd (VM_SOFTDIRTY: a kernel built
	// with CONFIG_MEM_SOFT_DIRTY, as Debian's are). Configuration, not
	// version.
	QuirkSoftDirty
	// QuirkLockOnFaultUnnamed: VM_LOCKONFAULT shows as "??"
	// (ops.VMAFlagUnnamed): kernels before its "lf" mnemonic, such as 6.1.
	QuirkLockOnFaultUnnamed
	// QuirkHeapLabelInclusive: an anonymous VMA is labelled [heap] when
	// vm_start <= brk && vm_end >= start_brk (6.1's show_map_vma), so also
	// one at the start of an empty heap; later kernels compare strictly
	// (vma_is_initial_heap).
	QuirkHeapLabelInclusive
	// QuirkMseal: the mseal system call exists (6.10); without it mseal is
	// ENOSYS. The kernel side reports it by calling mseal, never from the
	// release.
	QuirkMseal
	// QuirkRemapLookupFirst: mremap looks the source VMA up before it
	// checks a fixed target (EFAULT before the overlap's EINVAL), and a
	// fixed move unmaps the target (and shrinks the source) before it
	// checks the source range (6.1's mremap_to and vma_to_resize); later
	// kernels check everything first (check_mremap_params, check_prep_vma).
	QuirkRemapLookupFirst
	// QuirkMmapNextFirst: a new mapping merges with next first and with
	// prev only if prev's anon_vma is compatible with next's (6.1's
	// __mmap_region, which checks prev against the anon_vma of the VMA it
	// already chose); 6.12 and later try prev first and merge both when
	// both fit (vma_merge_new_range). So between an unfaulted prev and a
	// faulted next the mapping merges with next only, and between two
	// faulted VMAs it extends next instead of prev. The kernel side probes
	// the second: which VMA a page mapped between two written apart joins.
	QuirkMmapNextFirst
	// QuirkNoSwap: MADV_WILLNEED on a private anonymous VMA is EBADF, as
	// in a kernel built without CONFIG_SWAP (madvise_willneed reads
	// swapped pages back only where there can be some; the minimal guests
	// ci/kernel.sh builds have no swap). Configuration, not version; the
	// kernel side probes it with one madvise.
	QuirkNoSwap
	// QuirkNoZeroPage: a read fault on private anonymous memory allocates
	// a page, and so gives the VMA an anon_vma, where other kernels map
	// the shared zero page and leave it without one (seen on a 6.18.44
	// built for Firecracker guests: its mprotect then keeps VM_ACCOUNT,
	// and two pages read apart no longer merge). Configuration, not
	// version; the kernel side probes it with two pages read apart.
	QuirkNoZeroPage
	// QuirkDontUnmapApart: an MREMAP_DONTUNMAP move of an unfaulted
	// anonymous VMA to a target beside it merges with nothing there
	// (6.1's copy_vma skips vma_merge when the copy could join its
	// source); later kernels leave only the source out of the merge
	// (6.12's copy_vma clears it as prev or next) and the copy may join
	// its other neighbour.
	QuirkDontUnmapApart
	// QuirkDontUnmapSelfMerge: an MREMAP_DONTUNMAP copy of an unfaulted
	// anonymous VMA may merge with its own source (6.16's copy_vma lost
	// its keep_source), and the VMA they make is what is unlocked after
	// (dontunmap_complete), its anon_vma kept.
	QuirkDontUnmapSelfMerge
	// QuirkDontUnmapNoSplit: MREMAP_DONTUNMAP of part of a locked VMA
	// clears VM_LOCKED on the whole VMA, which is no longer split around
	// the range first (6.16's move_vma refactor; the pages left behind
	// stay counted in locked_vm: docs/kernel-bugs.md).
	QuirkDontUnmapNoSplit
	// QuirkDontUnmapPgoffKept: an anonymous source that MREMAP_DONTUNMAP
	// moved whole keeps its pgoff, though unfaulted again; the Debian
	// 6.1 and 6.12 trees set it to the VMA's address (pgoff_unfaulted),
	// so that it merges as an unfaulted VMA does. Seen on 6.18.44.
	QuirkDontUnmapPgoffKept
	// QuirkPopulateInWalk: MADV_POPULATE_READ and _WRITE go through the
	// madvise walk of the VMAs (6.1's madvise_vma_behavior), which steps
	// over a hole and says ENOMEM at the end; later kernels fault the range
	// in one loop (madvise_populate) that stops at the hole.
	QuirkPopulateInWalk

	// quirkEnd is the first bit no quirk has.
	quirkEnd
)

// VMAQuirksAll is every quirk bit there is (a model must run under any
// combination of them).
const VMAQuirksAll = quirkEnd - 1

var quirkNames = []string{
	"anon-merge-fix", "sticky-guard", "guard-regions", "account-drop", "stack-nohuge",
	"exec-only-pkey", "ksm", "thp", "multi-move", "fork-child-remap", "soft-dirty", "lf-unnamed",
	"heap-label-inclusive", "mseal", "remap-lookup-first", "mmap-next-first", "no-swap",
	"no-zero-page", "dontunmap-apart", "dontunmap-self-merge", "dontunmap-no-split",
	"dontunmap-pgoff-kept", "populate-in-walk",
}

// VMAQuirksLinux618 are the quirks of the kernel ipcfuzz's VMA group was
// written against (6.18.44 on x86-64 with protection keys).
const VMAQuirksLinux618 = QuirkAnonMergeFix | QuirkStickyGuard | QuirkGuardRegions | QuirkAccountDrop |
	QuirkStackNoHuge | QuirkExecOnlyPkey | QuirkKSM | QuirkTHP | QuirkMultiMove | QuirkForkChildRemap | QuirkMseal |
	QuirkDontUnmapSelfMerge | QuirkDontUnmapNoSplit | QuirkDontUnmapPgoffKept

// VMAQuirksLinux612 are the quirks Debian's 6.12 image reports (6.12.118
// on x86-64 with protection keys), soft-dirty (Debian's configuration)
// left out as VMAQuirksLinux618 leaves it.
const VMAQuirksLinux612 = QuirkAccountDrop | QuirkStackNoHuge | QuirkExecOnlyPkey | QuirkKSM | QuirkTHP |
	QuirkForkChildRemap | QuirkMseal | QuirkRemapLookupFirst

// VMAQuirksLinux61 are the quirks Debian's 6.1 image reports (6.1.192 on
// x86-64 with protection keys), soft-dirty left out.
const VMAQuirksLinux61 = QuirkExecOnlyPkey | QuirkKSM | QuirkTHP | QuirkForkChildRemap | QuirkLockOnFaultUnnamed |
	QuirkHeapLabelInclusive | QuirkRemapLookupFirst | QuirkMmapNextFirst | QuirkDontUnmapApart |
	QuirkPopulateInWalk

// VMAQuirksConfig are the quirks a kernel's configuration or its machine
// decides, not its version: soft-dirty tracking, protection keys, KSM,
// THP and swap.
const VMAQuirksConfig = QuirkSoftDirty | QuirkExecOnlyPkey | QuirkKSM | QuirkTHP | QuirkNoSwap | QuirkNoZeroPage

// VMAQuirksOf returns the quirks of a kernel version ipcfuzz knows: "6.1",
// "6.12" or "6.18".
func VMAQuirksOf(version string) (VMAQuirks, bool) {
	q, ok := map[string]VMAQuirks{"6.1": VMAQuirksLinux61, "6.12": VMAQuirksLinux612, "6.18": VMAQuirksLinux618}[version]
	return q, ok
}

// String writes the quirks' names joined by commas ("-" for none).
func (q VMAQuirks) String() string {
	var parts []string
	for i, n := range quirkNames {
		if q&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return nameList(parts)
}

// ParseVMAQuirks reads text written by VMAQuirks.String.
func ParseVMAQuirks(s string) (VMAQuirks, error) {
	var q VMAQuirks
	for _, part := range nameListItems(s) {
		found := false
		for i, n := range quirkNames {
			if n == part {
				q, found = q|1<<i, true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown VMA quirk %q (have %s)", part, strings.Join(quirkNames, ", "))
		}
	}
	return q, nil
}

// Workloads and fixed amounts of the VMA group.
const (
	// BrkExpand: n VMAs in the address space, then BrkRounds rounds of a
	// brk up by one page (it extends the heap VMA) and back down.
	BrkExpand Workload = "brk-expand"
	// BrkRounds is the number of rounds of the brk-expand workload.
	BrkRounds = 256
	// BrkExpandCalls is the number of brk calls of one repetition of the
	// brk-expand workload: its wall time divided by this is a brk's cost.
	BrkExpandCalls = 2 * BrkRounds
)
