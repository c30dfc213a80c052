// Package ipcns holds the semantics of one IPC namespace that every model
// shares: the *get() key handling of ipc/util.c (ipcget), permission checks,
// the limit and *_next_id sysctls, and the two id allocation policies (cyclic
// since 5.2, lowest-free before). What differs between models, the data
// structure holding the objects and the /proc/sysvipc walk, sits behind the
// Table interface; the naive and optimized packages each provide one.
package ipcns

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// Obj is one live IPC object.
type Obj struct {
	Idx   int
	Seq   int
	Key   int32  // IPC_PRIVATE once a segment is marked SHM_DEST
	Mode  uint16 // the 0777 bits
	Owner uint32 // the creator: cuid = cgid
	Size  int64  // shm segment size, sem nsems

	UID, GID uint32 // the owner, the creator's until IPC_SET

	// Shared memory only (struct shmid_kernel).
	Cpid, Lpid          ops.PID // creator and last shmat/shmdt, as task identities
	Nattch              int64
	Atime, Dtime, Ctime bool // set (non-zero) or not; Ctime is set for every type
	Dest, Locked        bool // SHM_DEST, SHM_LOCKED
	Creator             ops.PID
	Orphan              bool // the creator has exited (shm_clist is empty)
	// Huge is the huge pages a SHM_HUGETLB segment reserved (0: not one).
	Huge int64
	// Touched holds the pages a task has touched (resident: the rss), Data
	// the bytes written, by offset.
	Touched map[int64]bool
	Data    map[int64]uint8

	// Message queues only: every state of the queue still consistent with
	// what has been observed (woken tasks race; see msgq). All agree on
	// which tasks sleep on the queue.
	MsgQ []*msgq.Queue

	// Semaphore arrays only.
	Sem *semq.Array

	// space is the namespace the object lives in.
	space *space
}

// ID returns the user-visible id.
func (o *Obj) ID() int64 { return ops.MakeID(o.Seq, o.Idx) }

// Table is the idx -> object store of one IPC type: the kernel's idr plus its
// key rhashtable. Implementations count their own work in Counters.
type Table interface {
	// Get returns the object at idx, or nil.
	Get(idx int) *Obj
	// FindFree returns the lowest free idx in [from, to), or -1.
	FindFree(from, to int) int
	// Insert stores o at o.Idx, which must be free.
	Insert(o *Obj)
	// Remove frees idx, which must be occupied.
	Remove(idx int)
	// FindKey returns the live object with key (never IPC_PRIVATE), or nil.
	FindKey(key int32) *Obj
	// MaxIdx returns the highest occupied idx, or -1.
	MaxIdx() int
	// Len returns the number of live objects.
	Len() int
	// Listing returns the objects in /proc/sysvipc order (ascending idx),
	// found the way this implementation's seq_file walk finds them.
	Listing() []*Obj
	// Counters returns the work done so far (probes, nodes visited).
	Counters() map[string]int64
	// CostCounter names the counter that best measures the work done.
	CostCounter() string
}
