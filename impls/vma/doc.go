// Package vma models a process address space the way mm/vma.c and the
// syscalls around it (mmap, munmap, mprotect, mremap, brk, madvise, mlock,
// page faults) build it on Linux 6.18, for the ipcfuzz VMA subsystem.
//
// The semantic core is named after the kernel so that a kernel developer can
// hold a function here beside the one it models: isMergeableVMA,
// isMergeableAnonVMA, canVMAMergeLeft/Right, vmaMergeNewRange,
// vmaMergeExistingRange, vmaExpand, dupAnonVMA, splitVMA, vmaModify,
// copyVMA, findMergeableAnonVMA, anonVMAPrepare, doBrkFlags,
// mprotectFixup, mlockFixup, madviseUpdateVMA and so on. Each syscall runs
// the kernel's own procedure (gather and split, then algorithm A or B of
// vma-spec §1.7 with its left priority and left-to-right cascade); nothing
// ever "merges every mergeable pair".
//
// A VMA carries the state the kernel's merge decisions read but maps does
// not show: the anon_vma identity (nil until the first write fault), the
// fork-child bit (kept for a later Fork), the anonymous pgoff, the open file
// description, the hidden flags (VM_ACCOUNT and the rest), and the guard
// markers of its pages. Which version-dependent rules apply comes from
// ops.VMAQuirks, as the kernel adapter reports them.
//
// The VMAs live behind a Layout: NewSlice is a sorted slice (the naive
// implementation), NewTree an AVL tree keyed by start with O(log n) lookups
// (the optimized one). The two implementations also differ in one
// procedure: the naive one runs brk through the general new-range merge as
// 6.12 did before the just-expand hotfix (two extra tree walks per
// expanding brk), the optimized one in just-expand mode. Both give the same
// layouts; the Layout counts walks and the nodes they visit, which is what
// the brk-expand workload measures.
package vma
