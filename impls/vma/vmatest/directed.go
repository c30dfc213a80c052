package vmatest

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

func touch(page int64, w bool) Call {
	return Call{Op: Touch, Args: ops.VMAArgs{Start: page, Pages: 1, Write: w}}
}

func lock(start, pages int64, onFault bool) Call {
	return Call{Op: Lock, Args: ops.VMAArgs{Start: start, Pages: pages, OnFault: onFault}}
}

func remapInPlace(start, pages, newPages int64) Call {
	return Call{Op: Remap, Args: ops.VMAArgs{Start: start, Pages: pages, NewPages: newPages}}
}

func unmap(start, pages int64) Call {
	return Call{Op: Unmap, Args: ops.VMAArgs{Start: start, Pages: pages}}
}

// Directed are scripts aimed at rules random scripts reach rarely: guard
// markers and what carries or stops them, faults past the end of a file,
// execute-only keys, populate failures, multi-VMA moves, brk over an
// unmapped heap. They have no expected result of their own: the kernel
// decides, and the models must agree.
func Directed() []Case {
	const rw, rx, x = ops.ProtRead | ops.ProtWrite, ops.ProtRead | ops.ProtExec, ops.ProtExec
	return []Case{
		{Name: "mlock over a guard page fails after locking", Calls: []Call{mapAt(0, 4, rw), advise(2, 1, ops.AdviceGuardInstall), lock(0, 4, false), mapAt(4, 2, rw)}},
		{Name: "guard markers move with mremap", Calls: []Call{mapAt(0, 4, rw), advise(1, 1, ops.AdviceGuardInstall), remapFixed(0, 4, 4, 8), touch(9, false), touch(8, true), touch(1, true)}},
		{Name: "guard markers survive dontneed and mprotect, not munmap", Calls: []Call{mapAt(0, 4, rw), advise(1, 1, ops.AdviceGuardInstall), advise(0, 4, ops.AdviceDontNeed), protect(0, 4, ops.ProtRead), protect(0, 4, rw), touch(1, true), unmap(1, 1), mapAt(1, 1, rw), touch(1, true)}},
		{Name: "guard install on a file mapping: gu, no anon_vma", Calls: []Call{open(1), mapFile(0, 2, rw, 1, 0, 0), advise(0, 1, ops.AdviceGuardInstall), mapFile(2, 2, rw, 1, 2, 0), touch(3, true), protect(0, 2, ops.ProtRead), protect(0, 2, rw)}},
		{Name: "guard install refuses a locked VMA", Calls: []Call{mapAt(0, 2, rw), lock(0, 2, true), advise(0, 1, ops.AdviceGuardInstall), advise(0, 1, ops.AdviceDontNeed)}},
		{Name: "a write fault past the end of a private file still takes an anon_vma", Calls: []Call{open(1), mapFile(0, 2, rw, 1, ops.VMAFilePages+2, 0), touch(0, true), mapFile(2, 2, rw, 1, ops.VMAFilePages+4, 0), protect(0, 2, ops.ProtRead), protect(0, 2, rw)}},
		{Name: "populate of a private file past its end", Calls: []Call{open(1), mapFile(0, 3, rw, 1, ops.VMAFilePages-1, ops.MapPopulate), mapFile(3, 2, rw, 1, ops.VMAFilePages+2, 0), lock(0, 3, false)}},
		{Name: "exec-only mappings carry the key; more than exec drops it", Calls: []Call{mapAt(0, 4, x), mapAt(4, 2, rx), protect(4, 2, x), protect(0, 2, rx), touch(2, false), touch(0, false)}},
		{Name: "mlock of an exec-only or PROT_NONE VMA fails to populate", Calls: []Call{mapAt(0, 2, x), lock(0, 2, false), mapAt(2, 2, 0), lock(2, 2, false), lock(2, 2, true)}},
		{Name: "MAP_POPULATE and MAP_LOCKED of rw take an anon_vma", Calls: []Call{mapFlags(0, 2, rw, ops.MapPopulate), mapAt(3, 2, rw), touch(3, true), mapAt(2, 1, rw), mapFlags(8, 2, rw, ops.MapLocked), mapAt(10, 2, rw), touch(10, true)}},
		{Name: "a fixed move over several VMAs keeps the gaps", Calls: []Call{mapAt(0, 2, rw), mapAt(3, 1, ops.ProtRead), mapAt(5, 2, rw), remapFixed(0, 7, 7, 8)}},
		{Name: "a fixed move that lands next to the source", Calls: []Call{mapAt(0, 2, rw), mapAt(2, 1, ops.ProtRead), remapFixed(0, 3, 3, 3)}},
		{Name: "a fixed move starting in a hole", Calls: []Call{mapAt(2, 2, rw), remapFixed(0, 4, 4, 8)}},
		{Name: "mremap growth of a locked VMA populates the new part", Calls: []Call{mapAt(0, 2, rw), lock(0, 2, false), remapInPlace(0, 2, 4), mapAt(4, 2, rw), touch(4, true)}},
		{Name: "mremap growth of a shared anonymous mapping past its object", Calls: []Call{mapFlags(0, 2, rw, ops.MapShared), remapInPlace(0, 2, 4), touch(1, true), touch(3, true), touch(3, false)}},
		{Name: "mremap duplicate of a shared mapping (old length 0)", Calls: []Call{mapFlags(0, 3, rw, ops.MapShared), remapFixed(1, 0, 2, 8), remapFixed(1, 0, 2, 10)}},
		{Name: "brk after the heap was unmapped under the break", Calls: []Call{brk(4), heap(unmap(0, 4)), brk(6), brk(2), brk(0), brk(3)}},
		{Name: "brk shrink into a hole, then growth up to a mapping", Calls: []Call{brk(2), heap(mapAt(3, 1, rw)), brk(3), brk(1), heap(unmap(0, 1)), brk(0), brk(2)}},
		{Name: "mprotect of the heap and back re-merges", Calls: []Call{brk(4), heap(protect(1, 2, ops.ProtRead)), heap(protect(1, 2, rw)), brk(6)}},
		{Name: "madvise wipeonfork refuses a shared VMA mid-walk", Calls: []Call{mapAt(0, 2, rw), mapFlags(2, 2, rw, ops.MapShared), mapAt(4, 2, rw), advise(0, 6, ops.AdviceWipeOnFork)}},
		{Name: "mergeable skips shared VMAs without error", Calls: []Call{mapFlags(0, 2, rw, ops.MapShared), mapAt(2, 2, rw), advise(0, 4, ops.AdviceMergeable), advise(0, 4, ops.AdviceUnmergeable)}},
		{Name: "read-only description: shared read maps have no sh and no mw", Calls: []Call{open(1), {Op: Reopen, File: ops.VMAFileArgs{Handle: 2, Of: 1, ReadOnly: true}}, mapFile(0, 2, ops.ProtRead, 2, 0, ops.MapShared), protect(0, 2, rw), mapFile(2, 2, ops.ProtRead, 2, 2, ops.MapShared)}},
	}
}
