// Package vma is the vma subsystem (one process's address space: mmap,
// munmap, mprotect, mremap, brk, madvise, mlock, page faults) as the
// drivers see it: its generator and its registry value, Subsystem.
package vma

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	files int
}

// NewShadow returns the shadow of an empty address space.
func NewShadow(engine.Source) *Shadow { return &Shadow{} }

// Step draws one operation.
func (s *Shadow) Step(src engine.Source) ops.Op {
	start := int64(src.Intn(ops.VMAWindowPages-8, "start"))
	pages := int64(1 + src.Intn(8, "pages"))
	a := ops.VMAArgs{Start: start, Pages: pages, Prot: ops.VMAProt(src.Intn(8, "prot"))}
	switch src.Intn(6, "kind") {
	case 0:
		return ops.Op{Kind: ops.KindUnmap, VMA: a}
	case 1:
		return ops.Op{Kind: ops.KindProtect, VMA: a}
	case 2:
		a.Pages, a.Write = 0, src.Intn(2, "write") == 0
		return ops.Op{Kind: ops.KindTouch, VMA: a}
	}
	return ops.Op{Kind: ops.KindMap, VMA: a}
}

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { c := *s; return &c }

// MaxLen is the longest script Draw makes.
const MaxLen = 40

// Subsystem is the vma subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "vma",
	Doc:        "one address space: mmap, munmap, mprotect, mremap, brk, madvise, mlock, faults; VMA merging",
	NewShadow:  func(src engine.Source, _ equiv.Relation) engine.Shadow { return NewShadow(src) },
	MinLen:     1,
	MaxLen:     MaxLen,
	FuzzMaxLen: 30,
	Relations:  []equiv.Relation{equiv.Exact},
}
