package vma

// VMA is one vm_area_struct as far as merging and splitting read it.
type VMA struct {
	// Start and End are pages: [Start, End).
	Start, End int64
	Flags      Flags
	// File is the open file description mapped (vm_file), nil for a
	// private anonymous VMA; a shared anonymous VMA maps a shmem file of
	// its own.
	File *File
	// Pgoff is vm_pgoff: the file page at Start, or for a private anonymous
	// VMA the page number it had when created (kept when moved while
	// faulted).
	Pgoff int64
	// Anon is the anon_vma, nil until the first write fault.
	Anon *AnonVMA
	// ForkChild: the anon_vma_chain has more than one entry (the VMA was
	// faulted before a fork and this is the child's copy).
	ForkChild bool
	// CloseHook: vm_ops->close exists, so a merge may expand the VMA but
	// never delete it. The syscalls modelled never make one; the ported
	// merge tests do.
	CloseHook bool
}

// Pages is the VMA's length.
func (v *VMA) Pages() int64 { return v.End - v.Start }

// AnonVMA is an anon_vma; only its identity matters.
type AnonVMA struct{ ID int }

// File is an open file description (struct file).
type File struct {
	ID       int
	Inode    *Inode
	Writable bool // FMODE_WRITE
}

// Inode is the file behind descriptions.
type Inode struct {
	// Ordinal is the file's identity in the observable (1 for the first
	// file a script opens); for the shmem object of a shared anonymous
	// mapping it is an internal number and Shm is set.
	Ordinal int
	Shm     bool
	// Pages is the size; a page at or past it cannot be faulted in.
	Pages int64
}

// Walks counts the work of a Layout: every lookup, insertion, removal or
// store is one walk (as each is one maple tree walk in the kernel), and
// Nodes counts the nodes (or slice elements) the walks visited.
type Walks struct {
	Walks, Nodes int64
}

// Layout holds the VMAs of an address space in address order. VMAs never
// overlap; a VMA's range may change in place (then Store is called) as long
// as the order holds.
type Layout interface {
	// Find returns the first VMA ending above addr (find_vma), or nil.
	Find(addr int64) *VMA
	// Before returns the last VMA starting below addr, or nil.
	Before(addr int64) *VMA
	// Insert adds v; no VMA may start where v starts.
	Insert(v *VMA)
	// Remove takes v out.
	Remove(v *VMA)
	// Store records that v's range changed in place (vma_iter_store).
	Store(v *VMA)
	// All returns every VMA in order; it is not counted as a walk.
	All() []*VMA
	// Len is the number of VMAs.
	Len() int
	// Counts returns the walks so far.
	Counts() Walks
	// Clear removes every VMA and zeroes the counts.
	Clear()
}
