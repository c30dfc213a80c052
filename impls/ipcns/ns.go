package ipcns

import (
	"fmt"
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// ids is the allocator state of one type (struct ipc_ids).
type ids struct {
	table  Table
	state  AllocState
	nextID int64
	limit  int64
}

// space is one IPC namespace: three id spaces, their sysctls and what the
// kernel counts per namespace.
type space struct {
	types      [len(ops.IPCTypes)]*ids
	usedSems   int64
	semLimits  semLimits
	rmidForced int64 // kernel.shm_rmid_forced
	shmTot     int64 // shm_tot: pages of the live segments
	// seq is its place in Namespace.spaces: 0 for the script's, k for the
	// one the k-th unshare made.
	seq int
}

// Namespace is the IPC model of a script: the script's IPC namespace, the
// namespaces its tasks enter (unshare, setns), and the tasks. It
// implements ops.Model given a table constructor.
type Namespace struct {
	newTable func() Table
	alloc    Allocator
	// spaces are the IPC namespaces in the order they were made: the
	// script's first. in is the namespace each task is in (nil: the
	// script's), cur the namespace of the operation being applied.
	spaces []*space
	in     [ops.NumTasks]*space
	cur    *space
	// msgPolicy is how a receive wakes sleeping senders; msgQuirks are the
	// deliberate bugs of a mutant (none in the built-in models).
	msgPolicy msgq.Policy
	msgQuirks msgq.Quirk
	semOpts   semq.Options
	shm       shmState
	// asleep is the queue each task sleeps on in a msgsnd or msgrcv, or nil.
	asleep [ops.NumTasks]*Obj
	// used: the task ran an operation since the start or its last exit
	// (fork.go).
	used [ops.NumTasks]bool
	// undoOnFork, keepUndoOnSwitch and exitShmOnSetns are a mutant's
	// deliberate bugs (SetUndoOnFork, SetKeepUndoOnSwitch,
	// SetExitShmOnSetns).
	undoOnFork, keepUndoOnSwitch, exitShmOnSetns bool
	// capSysResource: root callers have CAP_SYS_RESOURCE (option
	// caps=sys_resource); the root of the machine this was written on has not.
	capSysResource bool
	// shmMaxPages is the largest segment shmget creates without ENOMEM on
	// the machine under test (ops.FactShmMaxPages; 0: no limit).
	shmMaxPages int64
	// hugeFacts are the huge pages SHM_HUGETLB may reserve (-1: no
	// hugetlbfs) and the size of one in small pages (ops.FactHugePages,
	// ops.FactHugePageKiB; 0 and 2 MiB when not reported).
	hugeFacts [2]int64
	// msgWork counts the message operations' work (never reset: the
	// counters are read as differences).
	msgWork msgWork
}

// New returns an empty namespace whose tables come from newTable and whose
// ids come from alloc.
func New(newTable func() Table, alloc Allocator) *Namespace {
	ns := &Namespace{newTable: newTable, alloc: alloc, hugeFacts: hugeFacts(ops.Facts{})}
	ns.clear()
	return ns
}

func (ns *Namespace) clear() {
	ns.spaces, ns.in = nil, [ops.NumTasks]*space{}
	ns.cur = ns.newSpace()
	ns.asleep = [ops.NumTasks]*Obj{}
	ns.used = [ops.NumTasks]bool{}
	ns.shm = shmState{atts: map[int]*attachment{}, winPage: map[int]int64{}, hugeFree: ns.hugeFacts[0], hugePages: ns.hugeFacts[1]}
}

// newSpace makes a fresh IPC namespace, the last of ns.spaces.
func (ns *Namespace) newSpace() *space {
	sp := &space{semLimits: defaultSemLimits(), seq: len(ns.spaces)}
	for _, t := range ops.IPCTypes {
		sp.types[t] = &ids{table: ns.newTable(), state: AllocState{LastIdx: -1}, nextID: -1, limit: ops.DefaultLimit(t)}
	}
	ns.spaces = append(ns.spaces, sp)
	return sp
}

// spaceOf is the namespace task t is in.
func (ns *Namespace) spaceOf(t uint8) *space {
	if int(t) < len(ns.in) && ns.in[t] != nil {
		return ns.in[t]
	}
	return ns.spaces[0]
}

// SetAllocator changes the allocation policy; it takes effect from the next Reset.
func (ns *Namespace) SetAllocator(a Allocator) { ns.alloc = a }

// SetMsgQuirks gives the model deliberate message-queue bugs, for mutation
// tests of the harness itself.
func (ns *Namespace) SetMsgQuirks(q msgq.Quirk) { ns.msgQuirks = q }

// SetMsgPolicy sets how a receive wakes sleeping senders (msgq.WakeFits
// since 4.9, msgq.WakeAll before).
func (ns *Namespace) SetMsgPolicy(p msgq.Policy) { ns.msgPolicy = p }

// Options are the options a namespace's Reset takes: caps only (the
// naive and optimized packages add their own).
var Options = ops.OptionSpecs{ops.CapsOption}

// Reset implements ops.Model: a fresh namespace. It takes caps (see
// ops.CapsOption) and refuses any other option; the machine facts it
// models are the largest shm segment (ops.FactShmMaxPages).
func (ns *Namespace) Reset(cfg ops.Config) error {
	opts, err := Options.Parse(cfg.Options)
	if err != nil {
		return err
	}
	ns.capSysResource = opts[ops.OptionCaps] == ops.CapSysResource
	ns.shmMaxPages, _ = cfg.Facts.ShmMaxPages()
	ns.hugeFacts = hugeFacts(cfg.Facts)
	ns.clear()
	return nil
}

// Close implements ops.Model.
func (ns *Namespace) Close() error { return nil }

// Table returns the table of one type (for cost counters and tests).
func (ns *Namespace) Table(t ops.IPCType) Table { return ns.spaces[0].types[t].table }

// Apply implements ops.Model.
func (ns *Namespace) Apply(op ops.Op) (ops.Result, error) {
	return ns.ApplyFollowing(op, nil)
}

// ApplyFollowing implements ops.Follower: where woken tasks race, the
// result other shows is taken if it is allowed.
func (ns *Namespace) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	if int(op.Type) >= len(ops.IPCTypes) {
		return ops.Result{}, fmt.Errorf("unknown IPC type %d", op.Type)
	}
	if err := ops.Validate(op); err != nil {
		return ops.Result{}, err
	}
	ns.cur = ns.spaceOf(op.Task)
	if op.Kind != ops.KindInterrupt { // sent to the task, not issued by it
		if int(op.Task) < len(ns.asleep) && ns.busy(op.Task) {
			return ops.Result{Err: ops.EBUSY}, nil
		}
		ns.markUsed(op)
	}
	h, ok := handlers.Of(op.Kind)
	if !ok {
		return ops.Result{}, handlers.Unhandled(op.Kind)
	}
	return h(ns, op, other), nil
}

func init() {
	handlers.Add(result((*Namespace).get), ops.KindGet)
	handlers.Add(func(ns *Namespace, op ops.Op, _ *ops.Result) (r ops.Result) {
		r.Err, r.Done = ns.rmid(op)
		return r
	}, ops.KindRmid)
	handlers.Add(result((*Namespace).stat), ops.KindStat)
	handlers.Add(result((*Namespace).churn), ops.KindChurn)
	handlers.Add(result((*Namespace).fill), ops.KindFill)
	handlers.Add(errno((*Namespace).setNextID), ops.KindNextID)
	handlers.Add(func(ns *Namespace, op ops.Op, _ *ops.Result) ops.Result {
		return ops.Result{ID: ns.cur.types[op.Type].nextID}
	}, ops.KindReadNextID)
	handlers.Add(errno((*Namespace).setLimit), ops.KindLimit)
	handlers.Add(func(ns *Namespace, op ops.Op, other *ops.Result) ops.Result {
		if op.Rows {
			return ns.listRows(op.Type, other)
		}
		return ns.list(op.Type)
	}, ops.KindList)
}

// get is ipcget(): ipcget_public for a key, ipcget_new for IPC_PRIVATE.
func (ns *Namespace) get(op ops.Op) ops.Result {
	if op.Type == ops.Sem && (op.Size < 0 || op.Size > ns.cur.semLimits.msl) {
		return ops.Result{Err: ops.EINVAL}
	}
	if op.Key == ops.IPCPrivate {
		return ns.create(op)
	}
	s := ns.cur.types[op.Type]
	o := s.table.FindKey(op.Key)
	if o == nil {
		if !op.Creat {
			return ops.Result{Err: ops.ENOENT}
		}
		return ns.create(op)
	}
	if op.Creat && op.Excl {
		return ops.Result{Err: ops.EEXIST}
	}
	if e := moreChecks(op, o); e != ops.OK {
		return ops.Result{Err: e}
	}
	if !permitted(o, op.As, op.Mode) {
		return ops.Result{Err: ops.EACCES}
	}
	return ops.Result{ID: o.ID()}
}

// moreChecks is the type's check on an existing object (shm_more_checks,
// sem_more_checks).
func moreChecks(op ops.Op, o *Obj) ops.Errno {
	switch op.Type {
	case ops.Shm:
		if o.Size < op.Size {
			return ops.EINVAL
		}
	case ops.Sem:
		if op.Size > o.Size {
			return ops.EINVAL
		}
	}
	return ops.OK
}

// shmMax is the default shmmax (ULONG_MAX - 2^24).
const shmMax = math.MaxUint64 - 1<<24

// create is newque/newary/newseg: the type's own checks, then ipc_addid.
func (ns *Namespace) create(op ops.Op) ops.Result {
	switch op.Type {
	case ops.Sem:
		if op.Size == 0 {
			return ops.Result{Err: ops.EINVAL}
		}
		if ns.cur.usedSems+op.Size > ns.cur.semLimits.mns {
			return ops.Result{Err: ops.ENOSPC}
		}
	case ops.Shm:
		if size := uint64(op.Size); size < 1 || size > shmMax {
			return ops.Result{Err: ops.EINVAL}
		}
		// shmem_kernel_file_setup takes the size as a loff_t: one above
		// LLONG_MAX (still below shmmax) is negative there, EINVAL. Then
		// it accounts the pages: more than the machine can commit is
		// ENOMEM (both before shmmni's ENOSPC).
		if op.Huge {
			if e := ns.hugeReserve(op); e != ops.OK {
				return ops.Result{Err: e}
			}
			break
		}
		if op.Size < 0 {
			return ops.Result{Err: ops.EINVAL}
		}
		if ns.shmMaxPages > 0 && ops.Pages(op.Size) > ns.shmMaxPages {
			return ops.Result{Err: ops.ENOMEM}
		}
	}
	o := &Obj{Key: op.Key, Mode: op.Mode & 0777, Owner: op.As, UID: op.As, GID: op.As, Size: op.Size, Ctime: true, space: ns.cur}
	if op.Type == ops.Msg {
		o.Size = 0
		ns.newQueue(o)
	}
	if op.Type == ops.Shm {
		o.Cpid = ns.taskPID(op.Task)
		o.Creator = o.Cpid
		if op.Huge {
			o.Huge = ns.hugeNeed(op.Size)
		}
	}
	if op.Type == ops.Sem {
		ns.newArray(o)
	}
	if e := ns.cur.types[op.Type].addid(o, ns.alloc); e != ops.OK {
		return ops.Result{Err: e} // a hugetlb reservation goes with the file
	}
	ns.shm.hugeFree -= o.Huge
	switch op.Type {
	case ops.Sem:
		ns.cur.usedSems += op.Size
	case ops.Shm:
		ns.cur.shmTot += ops.Pages(op.Size)
	}
	return ops.Result{ID: o.ID()}
}

// addid is ipc_addid: the limit, then the restore path or the allocator.
func (s *ids) addid(o *Obj, alloc Allocator) ops.Errno {
	limit := min(s.limit, ops.IPCMNI)
	if int64(s.table.Len()) >= limit {
		return ops.ENOSPC
	}
	if next := s.nextID; next >= 0 {
		s.nextID = -1
		idx := s.table.FindFree(ops.IDIdx(next), ops.IPCMNI)
		if idx < 0 {
			return ops.ENOSPC
		}
		o.Idx, o.Seq = idx, ops.IDSeq(next)
		s.table.Insert(o)
		return ops.OK
	}
	idx, seq, ok := alloc.Alloc(&s.state, s.table)
	if !ok {
		return ops.ENOSPC
	}
	o.Idx, o.Seq = idx, seq
	s.table.Insert(o)
	return ops.OK
}

// maxIdx is ipc_get_maxidx, as IPC_INFO and the
// other *_INFO commands return it (never below 0), and the snapshot shows it.
func (s *ids) maxIdx() int64 {
	switch n := s.table.Len(); {
	case n == 0:
		return 0
	case n == ops.IPCMNI:
		return ops.IPCMNI - 1
	}
	return int64(s.table.MaxIdx())
}

// lookup is ipc_obtain_object_check: EINVAL for a negative id, a free idx or a stale seq.
func (s *ids) lookup(id64 int64) *Obj {
	id := int64(int32(id64)) // the syscalls take an int
	if id < 0 {
		return nil
	}
	o := s.table.Get(ops.IDIdx(id))
	if o == nil || o.Seq != ops.IDSeq(id) {
		return nil
	}
	return o
}

func (ns *Namespace) rmid(op ops.Op) (ops.Errno, []ops.Completion) {
	s := ns.cur.types[op.Type]
	o := s.lookup(op.Obj.ID)
	if o == nil {
		return ops.EINVAL, nil
	}
	if !ownerOrCreator(o, op.As) {
		return ops.EPERM, nil
	}
	if op.Type == ops.Shm {
		ns.shmRmid(o)
		return ops.OK, nil
	}
	var done []ops.Completion
	if op.Type == ops.Msg {
		done = ns.msgRmid(o)
	}
	s.table.Remove(o.Idx)
	if op.Type == ops.Sem {
		done = ns.semRmid(o)
	}
	return ops.OK, done
}

// churn creates an IPC_PRIVATE object (size 1, one semaphore) and removes
// it again, op.Value times, and returns the last id: what a program
// creating and removing objects in a loop sees. Each object is gone before
// the next is made and nothing can observe it in between, so one Obj
// serves them all (no queue, no allocation a turn: a churn that wraps seq
// makes four million objects). An object it cannot create ends the loop
// with that error.
func (ns *Namespace) churn(op ops.Op) ops.Result {
	if op.Type == ops.Sem && ns.cur.usedSems+1 > ns.cur.semLimits.mns {
		return ops.Result{Err: ops.ENOSPC}
	}
	s := ns.cur.types[op.Type]
	o := &Obj{}
	var id int64
	for range op.Value {
		*o = Obj{Mode: 0o600, Owner: op.As, UID: op.As, GID: op.As, Size: 1, Ctime: true, space: ns.cur}
		if e := s.addid(o, ns.alloc); e != ops.OK {
			return ops.Result{Err: e}
		}
		id = o.ID()
		s.table.Remove(o.Idx)
	}
	return ops.Result{ID: id}
}

// fill creates op.Value IPC_PRIVATE objects (mode 0600, size 1, one
// semaphore) that stay, as that many gets would, and returns the last id;
// an object it cannot create ends it with that error (the ones made stay).
func (ns *Namespace) fill(op ops.Op) ops.Result {
	get := ops.Op{Kind: ops.KindGet, Type: op.Type, Key: ops.IPCPrivate, Mode: 0o600, Size: 1, As: op.As, Task: op.Task}
	var r ops.Result
	for range op.Value {
		if r = ns.create(get); r.Err != ops.OK {
			return r
		}
	}
	return r
}

// ownerOrCreator is the IPC_SET/IPC_RMID check of ipcctl_obtain_check: the
// caller is the creator or the owner, or has CAP_SYS_ADMIN (root).
func ownerOrCreator(o *Obj, as uint32) bool {
	return as == 0 || as == o.Owner || as == o.UID
}

func (ns *Namespace) stat(op ops.Op) ops.Result {
	o := ns.cur.types[op.Type].lookup(op.Obj.ID)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	if !permitted(o, op.As, 0444) {
		return ops.Result{Err: ops.EACCES}
	}
	return ops.Result{Obj: ops.Object{Key: o.Key, Mode: o.Mode, Owner: o.UID, Size: o.Size}}
}

// permitted is ipcperms(): the caller as (uid = gid = as, no supplementary
// groups; 0 is root, which has CAP_IPC_OWNER) asks for the rwx bits in flag.
func permitted(o *Obj, as uint32, flag uint16) bool {
	if as == 0 {
		return true
	}
	req := ((flag >> 6) | (flag >> 3) | flag) & 7
	granted := o.Mode & 7
	switch {
	case as == o.Owner || as == o.UID:
		granted = o.Mode >> 6
	case as == o.GID: // the caller's gid is as; the creator's gid is Owner
		granted = o.Mode >> 3
	}
	return req&^granted&7 == 0
}

func (ns *Namespace) setNextID(op ops.Op) ops.Errno {
	if op.As != 0 {
		return ops.EACCES // the sysctl file is root's
	}
	if op.Value < 0 || op.Value > math.MaxInt32 {
		return ops.EINVAL
	}
	ns.cur.types[op.Type].nextID = op.Value
	return ops.OK
}

// setLimit writes msgmni or shmmni (0..32768, else EINVAL) or the semmni field
// of kernel.sem (outside 0..32768 gives ERANGE and keeps the old value).
func (ns *Namespace) setLimit(op ops.Op) ops.Errno {
	if op.As != 0 {
		return ops.EACCES // the sysctl file is root's
	}
	if op.Value < math.MinInt32 || op.Value > math.MaxInt32 {
		return ops.EINVAL
	}
	if op.Type == ops.Sem {
		if op.Value < 0 || op.Value > ops.IPCMNI {
			return ops.ERANGE
		}
	} else if op.Value < 0 || op.Value > ops.IPCMNI {
		return ops.EINVAL
	}
	ns.cur.types[op.Type].limit = op.Value
	return ops.OK
}

func (ns *Namespace) list(t ops.IPCType) ops.Result {
	objs := ns.cur.types[t].table.Listing()
	var r ops.Result
	for _, o := range objs {
		r.List = append(r.List, ops.Entry{ID: o.ID(), Key: o.Key})
	}
	return r
}

// listRows reads /proc/sysvipc/<t> with every column.
func (ns *Namespace) listRows(t ops.IPCType, other *ops.Result) ops.Result {
	objs := ns.cur.types[t].table.Listing()
	r := ops.Result{Rows: make([]ops.Row, 0, len(objs))}
	for i, o := range objs {
		if t != ops.Msg {
			r.Rows = append(r.Rows, rowOf(t, o))
			continue
		}
		if other != nil && i < len(other.Rows) {
			want := other.Rows[i]
			o.keepStates(func(q *msgq.Queue) bool { return msgRow(o, q) == want })
		}
		r.Rows = append(r.Rows, msgRow(o, o.MsgQ[0]))
	}
	return r
}

// Snapshot implements ops.Model.
func (ns *Namespace) Snapshot() (ops.Snapshot, error) {
	return ns.SnapshotFollowing(nil)
}

// SnapshotFollowing implements ops.Follower: of the states a message queue
// may be in, the one other shows is taken if there is one.
func (ns *Namespace) SnapshotFollowing(other *ops.Snapshot) (ops.Snapshot, error) {
	defer func() { ns.cur = ns.spaces[0] }()
	var snap ops.Snapshot
	ns.cur = ns.spaces[0]
	var otherRows *[len(ops.IPCTypes)][]ops.Row
	var otherQueues []ops.QueueState
	if other != nil {
		otherRows, otherQueues = &other.Rows, other.Queues
	}
	snap.IDs, snap.Rows, snap.Queues = ns.typeStates(otherRows, otherQueues)
	snap.Shm = ns.shmSnapshot()
	snap.Sems, snap.SemLimits = ns.semStates(), ns.semLimitsState()
	for _, sp := range ns.spaces[1:] {
		tasks := ns.tasksIn(sp)
		if tasks == 0 {
			continue // nothing can reach it any more
		}
		ns.cur = sp
		otherRows, otherQueues = nil, nil
		if k := len(snap.Namespaces); other != nil && k < len(other.Namespaces) {
			otherRows, otherQueues = &other.Namespaces[k].Rows, other.Namespaces[k].Queues
		}
		n := ops.NamespaceState{Seq: sp.seq, Tasks: tasks, RmidForced: sp.rmidForced, ShmTot: sp.shmTot}
		n.IDs, n.Rows, n.Queues = ns.typeStates(otherRows, otherQueues)
		n.Sems, n.SemLimits = ns.semStates(), ns.semLimitsState()
		snap.Namespaces = append(snap.Namespaces, n)
	}
	return snap, nil
}

// tasksIn returns the tasks in namespace sp, bit N for task tN.
func (ns *Namespace) tasksIn(sp *space) uint16 {
	var tasks uint16
	for t, in := range ns.in {
		if in == sp {
			tasks |= 1 << t
		}
	}
	return tasks
}

// typeStates reads the ids, rows and message queues of the current
// namespace, following other's rows and queues where message queues may
// be in several states.
func (ns *Namespace) typeStates(otherRows *[len(ops.IPCTypes)][]ops.Row, otherQueues []ops.QueueState) (ids [len(ops.IPCTypes)]ops.TypeState, rows [len(ops.IPCTypes)][]ops.Row, queues []ops.QueueState) {
	for _, t := range ops.IPCTypes {
		s := ns.cur.types[t]
		ts := ops.TypeState{NextID: s.nextID, Limit: s.limit, MaxIdx: s.maxIdx()}
		for i, o := range s.table.Listing() {
			ts.Objects = append(ts.Objects, ops.Object{ID: o.ID(), Key: o.Key, Mode: o.Mode, Owner: o.UID, Size: o.Size})
			if t != ops.Msg {
				rows[t] = append(rows[t], rowOf(t, o))
				continue
			}
			var otherRow *ops.Row
			var otherQ *ops.QueueState
			if otherRows != nil && i < len(otherRows[t]) && i < len(otherQueues) {
				otherRow, otherQ = &otherRows[t][i], &otherQueues[i]
			}
			q := chooseQueueState(o, otherRow, otherQ)
			rows[t] = append(rows[t], msgRow(o, q))
			queues = append(queues, queueState(o, q))
		}
		ids[t] = ts
	}
	return ids, rows, queues
}

// switchSpace moves task op.Task into another IPC namespace: exit_sem in
// the one it leaves; an unshare (kernel/fork.c ksys_unshare) then runs
// exit_shm and makes a fresh namespace, a setns (kernel/nsproxy.c
// commit_nsset) does not run exit_shm: the segments the task created stay
// in its list, for its exit.
func (ns *Namespace) switchSpace(op ops.Op) ops.Result {
	var done []ops.Completion
	if !ns.keepUndoOnSwitch {
		done = ns.semExit(op.Task)
	}
	if op.Kind == ops.KindUnshare || ns.exitShmOnSetns {
		ns.exitShm(ns.taskPID(op.Task))
	}
	if op.Kind == ops.KindUnshare {
		ns.in[op.Task] = ns.newSpace()
	} else {
		ns.in[op.Task] = ns.spaceOf(op.NamespaceOf())
	}
	return ops.Result{Done: done}
}
