package vma

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Where the three regions live in the model's page numbers. Only
// differences within a region are observable; the anonymous pgoff of a VMA
// is its page number here, as the kernel's is its virtual page number. The
// THP area lies far above the widest window a pattern measures.
const (
	heapBase   int64 = 1 << 16
	windowBase int64 = 1 << 24
	thpBase    int64 = 1 << 25
)

// ebadf is EBADF, which the shared errno table does not name.
const ebadf = ops.Errno(9)

// Rules are the choices an address space is built with.
type Rules struct {
	// Quirks are the kernel's version-dependent rules.
	Quirks ops.VMAQuirks
	// BrkJustExpand: brk merges in just-expand mode (the 6.12 hotfix);
	// otherwise it goes through the general new-range merge with its two
	// extra walks, as 6.12 did before the hotfix. The layout is the same.
	BrkJustExpand bool
}

// Space is one address space: the window, the heap area and the program
// break, the open files and the guard markers. It implements
// ops.AddressSpace.
type Space struct {
	layout Layout
	rules  Rules
	files  map[int]*File
	// guards are the pages carrying a guard marker.
	guards        map[int64]bool
	startBrk, brk int64
	// brkBytes are the bytes of the break past the page brk (the break is
	// brk pages and brkBytes bytes).
	brkBytes  int64
	nextFile  int // open file descriptions made
	nextInode int // files opened (ordinals)
	nextShm   int // shmem objects made for shared anonymous mappings
	nextAnon  int // anon_vmas made
	// wide: the window is ops.VMAPatternPages long (WidenWindow).
	wide bool
	// memlock is RLIMIT_MEMLOCK in pages once a memlock ran (the process
	// then has no CAP_IPC_LOCK); -1 before: the limit does not apply.
	memlock int64
	// leaked are pages mm->locked_vm counts that no VM_LOCKED VMA holds
	// (ops.QuirkDontUnmapNoSplit: the kernel unlocks a source without
	// giving its pages back).
	leaked int64
}

var _ ops.AddressSpace = (*Space)(nil)

// New returns an empty address space on layout with rules.
func New(layout Layout, rules Rules) *Space {
	s := &Space{layout: layout, rules: rules}
	s.clear()
	return s
}

// NewNaive is the naive composition: a sorted slice, and brk through the
// general new-range merge.
func NewNaive(q ops.VMAQuirks) *Space { return New(NewSlice(), Rules{Quirks: q}) }

// NewOptimized is the optimized composition: an AVL tree, and brk in
// just-expand mode.
func NewOptimized(q ops.VMAQuirks) *Space {
	return New(NewTree(), Rules{Quirks: q, BrkJustExpand: true})
}

func (s *Space) clear() {
	s.layout.Clear()
	s.files = map[int]*File{}
	s.guards = map[int64]bool{}
	s.startBrk, s.brk, s.brkBytes = heapBase, heapBase, 0
	s.nextFile, s.nextInode, s.nextShm, s.nextAnon = 0, 0, 0, 0
	s.leaked = 0
	s.memlock = -1
}

// Reset implements ops.AddressSpace.
func (s *Space) Reset() error {
	s.clear()
	return nil
}

// Close implements ops.AddressSpace.
func (s *Space) Close() error { return nil }

// Rules returns the rules the space was built with.
func (s *Space) Rules() Rules { return s.rules }

// Walks returns the layout's walk counts so far.
func (s *Space) Walks() Walks { return s.layout.Counts() }

// abs turns a page of a region into a page of the model.
func (s *Space) abs(r ops.VMARegion, page int64) int64 {
	switch r {
	case ops.RegionHeap:
		return s.startBrk + page
	case ops.RegionTHP:
		return thpBase + page
	}
	return windowBase + page
}

// State implements ops.AddressSpace.
func (s *Space) State() (ops.VMAState, error) {
	st := ops.VMAState{Brk: s.brk - s.startBrk, BrkBytes: s.brkBytes}
	shm := map[*Inode]int{}
	var err error
	st.VMAs, err = ops.ObserveVMAs(s.layout.All(), func(v *VMA) (ops.VMA, error) { return s.observe(v, shm) })
	return st, err
}

// observe is what maps and smaps show of v.
func (s *Space) observe(v *VMA, shm map[*Inode]int) (ops.VMA, error) {
	o := ops.VMA{Perms: v.Flags.perms(), Flags: ops.VMAFlags(v.Flags & smapsMask)}
	switch {
	case v.Start >= thpBase:
		o.THP, o.Start, o.End = true, v.Start-thpBase, v.End-thpBase
	case v.Start >= windowBase:
		o.Start, o.End = v.Start-windowBase, v.End-windowBase
	case v.Start >= heapBase:
		o.Heap, o.Start, o.End = true, v.Start-s.startBrk, v.End-s.startBrk
		o.HeapLabel = v.File == nil && v.Start < pageAlign(s.brk, s.brkBytes) && v.End > s.startBrk // vm_start < brk
		if s.rules.Quirks&ops.QuirkHeapLabelInclusive != 0 {
			o.HeapLabel = v.File == nil && v.Start <= s.brk && v.End >= s.startBrk
		}
	default:
		return o, fmt.Errorf("vma: VMA at page %d lies in no region", v.Start)
	}
	if v.Flags&VMPkeyExecOnly != 0 {
		o.Pkey = execOnlyPkey
	}
	if v.File != nil {
		o.Offset = v.Pgoff
		if in := v.File.Inode; in.Shm {
			if shm[in] == 0 {
				shm[in] = len(shm) + 1
			}
			o.Shm = shm[in]
		} else {
			o.File = in.Ordinal
		}
	}
	return o, nil
}

func (s *Space) newFile(in *Inode, writable bool) *File {
	s.nextFile++
	return &File{ID: s.nextFile, Inode: in, Writable: writable}
}

func (s *Space) bindable(f ops.VMAFileArgs) error {
	if err := ops.CheckVMAFileArgs(f); err != nil {
		return err
	}
	if s.files[f.Handle] != nil {
		return fmt.Errorf("vma: file handle %d is already bound", f.Handle)
	}
	return nil
}

// Open implements ops.AddressSpace: a new file of ops.VMAFilePages pages.
func (s *Space) Open(f ops.VMAFileArgs) (ops.Errno, error) {
	if err := s.bindable(f); err != nil {
		return 0, err
	}
	s.nextInode++
	in := &Inode{Ordinal: s.nextInode, Pages: ops.VMAFilePages}
	s.files[f.Handle] = s.newFile(in, !f.ReadOnly)
	return ops.OK, nil
}

// Reopen implements ops.AddressSpace: a new description of Of's file.
func (s *Space) Reopen(f ops.VMAFileArgs) (ops.Errno, error) {
	if err := s.bindable(f); err != nil {
		return 0, err
	}
	of := s.files[f.Of]
	if of == nil {
		return ebadf, nil
	}
	s.files[f.Handle] = s.newFile(of.Inode, !f.ReadOnly)
	return ops.OK, nil
}

// Dup implements ops.AddressSpace: Of's description under a new handle.
func (s *Space) Dup(f ops.VMAFileArgs) (ops.Errno, error) {
	if err := s.bindable(f); err != nil {
		return 0, err
	}
	of := s.files[f.Of]
	if of == nil {
		return ebadf, nil
	}
	s.files[f.Handle] = of
	return ops.OK, nil
}
