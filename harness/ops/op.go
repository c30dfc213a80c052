package ops

// Ref names an object: by handle (the id bound by an earlier get) or by a
// literal id. Handles let one script run unchanged on implementations that
// number objects differently.
type Ref struct {
	Handle int   // > 0: the handle; 0: use ID
	ID     int64 // the literal id when Handle == 0
}

// Op is one operation of a script: a common part (kind, task, caller,
// handles) and the values of its subsystem. Which fields a kind uses, and
// how they are written, is its KindSpec's business.
type Op struct {
	Kind Kind
	Type IPCType // the IPC type word of kinds that take one
	Task uint8   // the task issuing the operation, 0..MaxTask (0: the script's main task)
	As   uint32  // the caller's uid and gid; 0 is root (see OptionCaps)
	Bind int     // the handle bound on success, of class KindSpec.Binds (0: none)
	Obj  Ref     // the IPC object operated on
	Att  int     // the attachment handle a shmdt detaches

	// Values of the IPC subsystems (ids, shm, msg).
	Key   int32  // get: the key
	Creat bool   // get: IPC_CREAT
	Excl  bool   // get: IPC_EXCL
	Mode  uint16 // get: permission bits 0..0777; the new mode of *ctl IPC_SET
	Size  int64  // get: shm size in bytes, sem nsems; msgsnd/msgrcv: the text size
	Value int64  // next_id, limit, churn, rmid_forced; the owner of shmctl IPC_SET, the qbytes of msgctl IPC_SET
	Rows  bool   // list: full rows (Result.Rows) instead of id:key entries

	Cmd   ShmCmd // shmctl
	Flags uint8  // shmat: ShmatRdonly, ShmatExec, ShmatBadAddr, ShmatRnd, ShmatRemap
	// Addr is the address of a shmat (at=), a shmdt, a read or a write
	// (with Att: relative to an attachment's address).
	Addr ShmAddr
	// Huge is SHM_HUGETLB on a shmget.
	Huge bool

	Mtype    int64  // msgsnd: mtype; msgrcv: msgtyp
	Fill     uint8  // msgsnd: the text is MsgText(Fill, Size)
	MsgFlags uint8  // msgsnd, msgrcv: MsgNowait, MsgNoerror, MsgExcept, MsgCopy
	MCmd     MsgCmd // msgctl

	Sem   SemArgs   // the sem subsystem (sem.go)
	VMA   VMAArgs   // the vma subsystem (vma.go, vmakinds.go)
	VFile VFileArgs // the vma subsystem's file handles
	// Group is the gid an IPC_SET gives (gid=N); 0 keeps the rule without
	// it: the owner's (shmctl, semctl) or the queue's own (msgctl).
	Group uint32
	// BadBuf: the buffer argument (msgsnd's and msgrcv's msgp, a *ctl's
	// buf, semop's sops) is an address certainly unmapped in the task
	// (BadAddress), so the kernel's copy in or out fails with EFAULT where
	// it makes it.
	BadBuf bool
}

// BadAddress is the address a bad pointer argument holds: page 1, below
// every kernel's mmap_min_addr default and never mapped by a task, and not
// NULL, which some arguments take as "none" (semtimedop's timeout).
const BadAddress = 0x1000

// argBadBuf is the badbuf flag of the calls that copy a buffer.
var argBadBuf = flagBool("badbuf", func(o *Op) *bool { return &o.BadBuf })

// GroupOr is the gid an IPC_SET gives: gid= when the operation has one,
// else dflt.
func (op Op) GroupOr(dflt uint32) uint32 {
	if op.Group != 0 {
		return op.Group
	}
	return dflt
}

// Result is what one operation returned: a common part (the errno, whether
// the task went to sleep, the sleeping tasks it completed) and the values of
// the operation's subsystem.
type Result struct {
	Err Errno
	// Blocked: the call sleeps (its task is busy until a later operation
	// completes it).
	Blocked bool
	// Done: tasks asleep in earlier calls that returned during this
	// operation, in task order.
	Done []Completion
	// Alternatives is how many distinct results a model allowed for this
	// operation (0 or 1: one; more: woken tasks raced). It is a statistic,
	// not part of the result: equivalence and the text form ignore it.
	Alternatives int

	// ID is the id a get returned, the last id a churn made, or the return
	// value of a *ctl that returns one (the full id of *_STAT, the highest
	// idx in use of *_INFO), or the page a remap with maymove left the
	// range at.
	ID   int64
	Obj  Object  // stat: key, mode, owner, size (Obj.ID stays 0)
	List []Entry // list: ids and keys in iteration order
	Row  Row     // the row of shmctl/msgctl IPC_STAT and *_STAT*
	Rows []Row   // list rows: full rows in iteration order
	Info ShmInfo // shmctl IPC_INFO, SHM_INFO

	Msg     Message // msgrcv
	Qbytes  int64   // msgctl IPC_STAT, MSG_STAT, MSG_STAT_ANY (Row has the rest)
	MsgInfo MsgInfo // msgctl IPC_INFO, MSG_INFO

	Sem SemResult // the sem subsystem (sem.go)
	Shm ShmResult // shmat at an address, read, write (shmaddr.go)

	// Layout is the address space a layout operation observed: what the
	// final snapshot's VMA group would show at that step.
	Layout VMAState
}

// Snapshot is the whole observable state of an implementation, one group
// per subsystem; the canonical text of each group (FormatSnapshot) is what
// equivalence compares.
type Snapshot struct {
	IDs [len(IPCTypes)]TypeState
	// Rows holds every live object of each type as /proc/sysvipc shows it,
	// in ascending idx order.
	Rows [len(IPCTypes)][]Row
	Shm  ShmState
	// Queues holds every message queue's messages and sleepers, in
	// ascending idx order.
	Queues []QueueState
	// Sems holds every semaphore array, in ascending idx order, and
	// SemLimits the namespace's kernel.sem.
	Sems      []SemState
	SemLimits SemLimits
	// VMA is the address space of the vma subsystem.
	VMA VMAState
	// Namespaces are the IPC namespaces other than the script's that a
	// task is in (unshare, setns), in the order they were made (by Seq);
	// the fields above are the script's namespace.
	Namespaces []NamespaceState
}

// NamespaceState is an IPC namespace other than the script's, as a
// snapshot shows it: the tasks in it, and its IPC state as in a Snapshot
// (attachments and the address space are the tasks', shown once there).
type NamespaceState struct {
	// Seq is k for the namespace the script's k-th unshare made.
	Seq int
	// Tasks has bit N set for each task tN in the namespace.
	Tasks      uint16
	IDs        [len(IPCTypes)]TypeState
	Rows       [len(IPCTypes)][]Row
	RmidForced int64 // kernel.shm_rmid_forced
	ShmTot     int64 // shm_tot, pages in use
	Queues     []QueueState
	Sems       []SemState
	SemLimits  SemLimits
}

// ObjectsOf returns the live objects of one type.
func (s *Snapshot) ObjectsOf(t IPCType) []Object { return s.IDs[t].Objects }

// Handles maps the object handles of a script to the ids one implementation
// gave them.
type Handles map[int]int64

// Resolve returns op with its object reference turned into a literal id. A
// handle that was never bound (its get failed) resolves to -1, which every
// implementation rejects with EINVAL.
func (h Handles) Resolve(op Op) Op {
	if op.Obj.Handle > 0 {
		id, ok := h[op.Obj.Handle]
		if !ok {
			id = -1
		}
		op.Obj = Ref{ID: id}
	}
	return op
}

// Record binds op's object handle to the id a successful operation returned.
func (h Handles) Record(op Op, r Result) {
	if op.Bind > 0 && r.Err == OK && !r.Blocked {
		if s := Spec(op.Kind); s != nil && s.Binds == ClassObject {
			h[op.Bind] = r.ID
		}
	}
}
