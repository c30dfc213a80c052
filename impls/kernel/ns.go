//go:build linux && amd64

package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// ns is the adapter on the worker thread: the thread (package worker), and
// what the adapter remembers of the namespace the thread is in, between
// two Resets. Only the thread itself touches the rest; the Model holds w.
type ns struct {
	w *worker.Thread
	// dirty says an op ran since the last unshare: the namespace is no
	// longer fresh.
	dirty bool
	// nextIDWritten records, per type, a write to <type>_next_id since the
	// last unshare. Only such a write can make the value differ from the
	// -1 of a new namespace (the allocator only ever sets it back to -1,
	// and nothing else can reach this private namespace), so a snapshot
	// reads the file only then: the first open of a sysctl file in a new
	// namespace costs about 100 µs.
	nextIDWritten [len(ops.IPCTypes)]bool
	// proc reads /proc for the thread.
	proc procfs
	// tasks are t1..t15.
	tasks *tasks
	shm   shmState
	// win is the worker's shm window in this process (0 until claimed).
	win uintptr
	// spaces are the namespaces the script's tasks went to
	// (namespaces.go).
	spaces spaces
	// kcov is the thread's coverage, once a run asked for it (cover.go).
	kcov kcovState
	// sys is the thread's syscall counter, once a run asked for times
	// (syscalls.go).
	sys sysState
}

// shmState is what the adapter remembers of the shm subsystem in a script:
// the attachments it made, and whether shm_rmid_forced was written.
type shmState struct {
	attached []*kattach
	atts     map[int]*kattach
	// attachedBy records, per task, a shmat by that task in this script
	// (by this incarnation or an earlier one): only those tasks can hold
	// an attachment, so only their maps are read.
	attachedBy    [ops.NumTasks]bool
	forcedWritten bool
	// winPage is the window page of each handle bound by a shmat at a
	// window address: the handle names it even once detached.
	winPage map[int]int64
	// winNS is, per task, the namespace (Seq) of the segment mapped at
	// each page of its window, for the pages a shmat mapped while a task
	// had left the script's namespace (every other page: 0): what a piece
	// no kattach starts is of.
	winNS [ops.NumTasks]map[int64]int
}

// kattach is one attachment the adapter made: which task holds it, at
// which address.
type kattach struct {
	att  int
	task int
	pid  ops.PID
	addr uintptr
	id   int64
	win  bool // at a window address
	ns   int  // the namespace of the segment (Seq: 0 for the script's)
	// origin is the shmat the mapping comes from: itself, or for a fork's
	// copy (the same address in the child) the parent's origin.
	origin *kattach
}

// begin starts the state of a script.
func (s *shmState) begin() {
	s.attached, s.atts, s.winPage = nil, map[int]*kattach{}, map[int]int64{}
	s.attachedBy, s.forcedWritten = [ops.NumTasks]bool{}, false
	s.winNS = [ops.NumTasks]map[int64]int{}
}
