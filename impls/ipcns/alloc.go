package ipcns

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// AllocState is what an allocator remembers between allocations of one type.
type AllocState struct {
	Seq     int // the current sequence number
	LastIdx int // idx of the last allocation, -1 before the first
	Cursor  int // idr_next: where the next cyclic search starts
}

// Allocator chooses the idx and seq of a new object: the part of ipc_addid
// that the 2019 patches changed. It is called only when the limit allows one
// more object and no *_next_id request is pending; ok false means ENOSPC.
type Allocator interface {
	Alloc(st *AllocState, t Table) (idx, seq int, ok bool)
}

// The two allocation policies Linux has had.
var (
	// Cyclic is Linux >= 5.2: idr_alloc_cyclic over min(max(in_use*3/2, 64),
	// ipc_mni) slots, seq bumped when the new idx is not above the last one,
	// wrapping from 65534 to 0.
	Cyclic Allocator = cyclic{}
	// Legacy is Linux < 5.2: the lowest free idx, seq bumped on every
	// allocation, wrapping after 65535.
	Legacy Allocator = legacy{}
)

type cyclic struct{}

func (cyclic) Alloc(st *AllocState, t Table) (int, int, bool) {
	window := min(max(t.Len()*3/2, ops.MinCycle), ops.IPCMNI)
	idx := t.FindFree(st.Cursor, window)
	if idx < 0 && st.Cursor > 0 {
		idx = t.FindFree(0, window)
	}
	if idx < 0 {
		return 0, 0, false // cannot happen: fewer than window objects live
	}
	st.Cursor = idx + 1
	if idx <= st.LastIdx {
		st.Seq++
		if st.Seq >= ops.SeqMax {
			st.Seq = 0
		}
	}
	st.LastIdx = idx
	return idx, st.Seq, true
}

type legacy struct{}

func (legacy) Alloc(st *AllocState, t Table) (int, int, bool) {
	idx := t.FindFree(0, ops.IPCMNI)
	if idx < 0 {
		return 0, 0, false
	}
	seq := st.Seq
	st.Seq++
	if st.Seq > ops.SeqMax {
		st.Seq = 0
	}
	st.LastIdx = idx
	return idx, seq, true
}
