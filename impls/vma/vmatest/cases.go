package vmatest

import (
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Builders of calls, in pages of the window unless said otherwise.
const (
	rw   = ops.ProtRead | ops.ProtWrite
	ro   = ops.ProtRead
	none = ops.VMAProt(0)
)

func mapAt(start, pages int64, prot ops.VMAProt) Call {
	return Call{Op: Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot}}
}

func mapFile(start, pages int64, prot ops.VMAProt, h int, off int64, flags ops.VMAMapFlags) Call {
	return Call{Op: Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot, File: h, Offset: off, Flags: flags}}
}

func mapFlags(start, pages int64, prot ops.VMAProt, flags ops.VMAMapFlags) Call {
	return Call{Op: Map, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot, Flags: flags}}
}

func protect(start, pages int64, prot ops.VMAProt) Call {
	return Call{Op: Protect, Args: ops.VMAArgs{Start: start, Pages: pages, Prot: prot}}
}

func write(page int64) Call {
	return Call{Op: Touch, Args: ops.VMAArgs{Start: page, Pages: 1, Write: true}}
}

func advise(start, pages int64, adv ops.VMAAdvice) Call {
	return Call{Op: Advise, Args: ops.VMAArgs{Start: start, Pages: pages, Advice: adv}}
}

func remapFixed(start, pages, newPages, target int64) Call {
	return Call{Op: Remap, Args: ops.VMAArgs{Start: start, Pages: pages, NewPages: newPages, Fixed: true, Target: target}}
}

func brk(b int64) Call { return Call{Op: Brk, Args: ops.VMAArgs{Break: b}} }

func open(h int) Call {
	return Call{Op: Open, File: ops.VMAFileArgs{Handle: h}}
}

func heap(c Call) Call {
	c.Args.Heap = true
	return c
}

// Case is a script with what it must give on a kernel with the quirks of
// ops.VMAQuirksLinux618: the final state (FormatVMAState) or the errnos.
type Case struct {
	Name  string
	Calls []Call
	Want  string
	Errs  []ops.Errno
}

// state is the text of a state: the break and the VMA lines.
func state(brk int64, lines ...string) string {
	var b strings.Builder
	b.WriteString(ops.FormatVMAState(ops.VMAState{Brk: brk}))
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// anonRW is a private anonymous read-write VMA as maps and smaps show it.
const anonRW = "rw-p anon mr,mw,me,ac"

// SpecCases are the worked cases of vma-spec §5 and the anon_vma, VM_ACCOUNT,
// file and brk rules of §2 to §4, each as a script and the state it ends in.
func SpecCases() []Case {
	return []Case{
		{Name: "S10 mmap next to a compatible prev extends it",
			Calls: []Call{mapAt(0, 2, rw), write(0), mapAt(2, 2, rw)},
			Want:  state(0, "w:0-4 "+anonRW)},
		{Name: "S11 mmap before a compatible next extends it down",
			Calls: []Call{mapAt(2, 2, rw), write(2), mapAt(0, 2, rw)},
			Want:  state(0, "w:0-4 "+anonRW)},
		{Name: "S13 mmap filling a hole merges all three",
			Calls: []Call{mapAt(0, 2, rw), mapAt(3, 2, rw), mapAt(2, 1, rw)},
			Want:  state(0, "w:0-5 "+anonRW)},
		{Name: "S12 but prev and next have different anon_vmas: prev only",
			Calls: []Call{mapAt(0, 2, rw), mapAt(3, 2, rw), write(0), write(3), mapAt(2, 1, rw)},
			Want:  state(0, "w:0-3 "+anonRW, "w:3-5 "+anonRW)},
		{Name: "S60 mprotect of a whole VMA between compatible ones: 3-way merge",
			Calls: []Call{mapAt(0, 6, rw), protect(2, 2, ro), protect(2, 2, rw)},
			Want:  state(0, "w:0-6 "+anonRW)},
		{Name: "S45 the same with different anon_vmas around: left only",
			Calls: []Call{mapAt(0, 2, rw), mapAt(2, 2, ro), mapAt(4, 2, rw), write(0), write(4), protect(2, 2, rw)},
			Want:  state(0, "w:0-4 "+anonRW, "w:4-6 "+anonRW)},
		{Name: "S46 mprotect of a left-edge sub-range: prev grows",
			Calls: []Call{mapAt(0, 2, ro), mapAt(2, 4, rw), protect(2, 2, ro)},
			Want:  state(0, "w:0-4 r--p anon mr,mw,me", "w:4-6 "+anonRW)},
		{Name: "S47 mprotect of a right-edge sub-range: next grows down",
			Calls: []Call{mapAt(0, 4, rw), mapAt(4, 2, ro), protect(2, 2, ro)},
			Want:  state(0, "w:0-2 "+anonRW, "w:2-6 r--p anon mr,mw,me")},
		{Name: "S48 left refused (different anon_vma), right allowed: merges right",
			Calls: []Call{mapAt(0, 2, rw), write(0), mapAt(3, 3, rw), write(3), protect(3, 1, ro), mapAt(2, 1, rw), protect(3, 1, rw)},
			Want:  state(0, "w:0-3 "+anonRW, "w:3-6 "+anonRW)},
		{Name: "S01 mprotect of an interior sub-range: a 3-way split",
			Calls: []Call{mapAt(0, 6, rw), protect(2, 2, ro)},
			Want:  state(0, "w:0-2 "+anonRW, "w:2-4 r--p anon mr,mw,me", "w:4-6 "+anonRW)},
		{Name: "S03 an unfaulted rw piece set back to none drops ac and re-merges",
			Calls: []Call{mapAt(0, 6, none), protect(2, 2, rw), protect(2, 2, none)},
			Want:  state(0, "w:0-6 ---p anon mr,mw,me")},
		{Name: "S04 a faulted one keeps ac and stays apart",
			Calls: []Call{mapAt(0, 6, none), protect(2, 2, rw), write(2), protect(2, 2, none)},
			Want:  state(0, "w:0-2 ---p anon mr,mw,me", "w:2-4 ---p anon mr,mw,me,ac", "w:4-6 ---p anon mr,mw,me")},
		{Name: "S14 a neighbour differing in protection only lends its anon_vma, so they merge later",
			Calls: []Call{mapAt(0, 2, rw), mapAt(2, 2, ro), protect(2, 2, rw), protect(2, 2, ro), write(0), protect(2, 2, rw), write(2), protect(0, 2, ro), protect(0, 2, rw)},
			Want:  state(0, "w:0-4 "+anonRW)},
		{Name: "S15 one differing in dd does not",
			Calls: []Call{mapAt(0, 2, rw), mapAt(2, 2, rw), advise(2, 2, ops.AdviceDontDump), write(0), write(2), advise(2, 2, ops.AdviceDoDump)},
			Want:  state(0, "w:0-2 "+anonRW, "w:2-4 "+anonRW)},
		{Name: "S32 a faulted VMA moved keeps its pgoff and does not merge at the new place",
			Calls: []Call{mapAt(0, 2, rw), write(0), mapAt(10, 2, rw), remapFixed(0, 2, 2, 8)},
			Want:  state(0, "w:8-10 "+anonRW, "w:10-12 "+anonRW)},
		{Name: "S31 an unfaulted one takes the new address as pgoff and merges",
			Calls: []Call{mapAt(0, 2, rw), mapAt(10, 2, rw), remapFixed(0, 2, 2, 8)},
			Want:  state(0, "w:8-12 "+anonRW)},
		{Name: "S53 moving the faulted one back home restores the match",
			Calls: []Call{mapAt(0, 4, rw), write(0), remapFixed(2, 2, 2, 10), remapFixed(10, 2, 2, 2)},
			Want:  state(0, "w:0-4 "+anonRW)},
		{Name: "S54 guard install marks the whole VMA gu, which merges ignore and keep",
			Calls: []Call{mapAt(0, 2, rw), advise(0, 1, ops.AdviceGuardInstall), mapAt(2, 2, rw)},
			Want:  state(0, "w:0-4 rw-p anon mr,mw,me,gu,ac")},
		{Name: "S18 two opens of one file never merge, dups do",
			Calls: []Call{open(1), {Op: Reopen, File: ops.VMAFileArgs{Handle: 2, Of: 1}}, {Op: Dup, File: ops.VMAFileArgs{Handle: 3, Of: 1}},
				mapFile(0, 2, rw, 1, 0, ops.MapShared), mapFile(2, 2, rw, 2, 2, ops.MapShared), mapFile(4, 2, rw, 3, 4, ops.MapShared)},
			Want: state(0, "w:0-2 rw-s f1+0 mr,mw,me,ms", "w:2-4 rw-s f1+2 mr,mw,me,ms", "w:4-6 rw-s f1+4 mr,mw,me,ms")},
		{Name: "S16 file offsets must be contiguous",
			Calls: []Call{open(1), mapFile(0, 2, ro, 1, 0, 0), mapFile(2, 2, ro, 1, 2, 0), mapFile(4, 2, ro, 1, 8, 0)},
			Want:  state(0, "w:0-4 r--p f1+0 mr,mw,me", "w:4-6 r--p f1+8 mr,mw,me")},
		{Name: "S08 NORESERVE blocks the merge with a plain reservation",
			Calls: []Call{mapFlags(0, 2, none, ops.MapNoReserve), mapAt(2, 2, none)},
			Want:  state(0, "w:0-2 ---p anon mr,mw,me,nr", "w:2-4 ---p anon mr,mw,me")},
		{Name: "S76 MAP_STACK sets nh",
			Calls: []Call{mapFlags(0, 2, rw, ops.MapStack), mapAt(2, 2, rw)},
			Want:  state(0, "w:0-2 rw-p anon mr,mw,me,ac,nh", "w:2-4 "+anonRW)},
		{Name: "B01 brk with a matching predecessor extends it",
			Calls: []Call{brk(2), brk(4)},
			Want:  state(4, "h:0-4 rw-p anon [heap] mr,mw,me,ac")},
		{Name: "B04 a tail protected r-- blocks growth: a new VMA",
			Calls: []Call{brk(4), heap(protect(3, 1, ro)), brk(6)},
			Want:  state(6, "h:0-3 rw-p anon [heap] mr,mw,me,ac", "h:3-4 r--p anon [heap] mr,mw,me", "h:4-6 rw-p anon [heap] mr,mw,me,ac")},
		{Name: "B08 brk never merges right, and keeps a free page before the next VMA",
			Calls: []Call{brk(2), heap(mapAt(4, 2, rw)), brk(4), brk(3)},
			Want:  state(3, "h:0-3 rw-p anon [heap] mr,mw,me,ac", "h:4-6 "+anonRW)},
		{Name: "B09 an rw mmap at the break merges into [heap]",
			Calls: []Call{brk(2), heap(mapAt(2, 2, rw))},
			Want:  state(2, "h:0-4 rw-p anon [heap] mr,mw,me,ac")},
		{Name: "B03 a shrink can remove [heap] entirely",
			Calls: []Call{brk(3), brk(0)},
			Want:  state(0)},
	}
}

// SpecErrorCases are scripts and the errno of each call.
func SpecErrorCases() []Case {
	return []Case{
		{Name: "S61 mprotect stops at the first hole with ENOMEM", Calls: []Call{mapAt(0, 2, rw), mapAt(3, 2, rw), protect(0, 5, ro)}, Errs: []ops.Errno{0, 0, ops.ENOMEM}},
		{Name: "S62 madvise goes on over holes and returns ENOMEM", Calls: []Call{mapAt(0, 2, rw), mapAt(3, 2, rw), advise(0, 5, ops.AdviceDontDump)}, Errs: []ops.Errno{0, 0, ops.ENOMEM}},
		{Name: "S65 mremap of a range over two VMAs", Calls: []Call{mapAt(0, 2, rw), mapAt(2, 2, ro), {Op: Remap, Args: ops.VMAArgs{Start: 0, Pages: 4, NewPages: 5}}}, Errs: []ops.Errno{0, 0, ops.EFAULT}},
		{Name: "S30 mremap growth into a mapped page", Calls: []Call{mapAt(0, 2, rw), mapAt(2, 2, ro), {Op: Remap, Args: ops.VMAArgs{Start: 0, Pages: 2, NewPages: 3}}}, Errs: []ops.Errno{0, 0, ops.ENOMEM}},
		{Name: "brk below its start fails", Calls: []Call{brk(-1)}, Errs: []ops.Errno{ops.ENOMEM}},
		{Name: "a shared writable map of a read-only file", Calls: []Call{open(1), {Op: Reopen, File: ops.VMAFileArgs{Handle: 2, Of: 1, ReadOnly: true}}, mapFile(0, 1, rw, 2, 0, ops.MapShared)}, Errs: []ops.Errno{0, 0, ops.EACCES}},
		{Name: "a map of a handle not open", Calls: []Call{mapFile(0, 1, rw, 4, 0, 0)}, Errs: []ops.Errno{ops.Errno(9)}},
		{Name: "a write to a read-only page", Calls: []Call{mapAt(0, 1, ro), write(0)}, Errs: []ops.Errno{0, ops.EFAULT}},
		{Name: "a write past the end of the file", Calls: []Call{open(1), mapFile(0, 2, rw, 1, ops.VMAFilePages-1, 0), write(0), write(1)}, Errs: []ops.Errno{0, 0, 0, ops.EFAULT}},
	}
}
