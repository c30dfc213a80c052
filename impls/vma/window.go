package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// windowPages is the size of the window the space takes operations in:
// ops.VMAWindowPages, or ops.VMAPatternPages while it measures a pattern
// whose body grows the address space (WidenWindow).
func (s *Space) windowPages() int64 {
	if s.wide {
		return ops.VMAPatternPages
	}
	return ops.VMAWindowPages
}

// check validates an operation's arguments against the space's window.
func (s *Space) check(a ops.VMAArgs) error { return ops.CheckVMAArgsIn(a, s.windowPages()) }

// WidenWindow makes the window ops.VMAPatternPages long, for the
// measurement of a pattern (ops.Vary.Page), until the returned function
// narrows it again. Only a model can: its window is page numbers, not an
// address range reserved in a process.
func (s *Space) WidenWindow() (narrow func()) {
	s.wide = true
	return func() { s.wide = false }
}
