package ops

import "fmt"

// IPCType names one of the three SysV IPC object types. Each has an id
// allocator, a key table and limits of its own.
type IPCType uint8

// The three SysV IPC types.
const (
	Msg IPCType = iota
	Sem
	Shm
)

// IPCTypes lists every type in a fixed order (also the order of Snapshot.IDs).
var IPCTypes = [...]IPCType{Msg, Sem, Shm}

func (t IPCType) String() string {
	switch t {
	case Msg:
		return "msg"
	case Sem:
		return "sem"
	case Shm:
		return "shm"
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// ParseIPCType reads "msg", "sem" or "shm".
func ParseIPCType(s string) (IPCType, error) {
	for _, t := range IPCTypes {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown IPC type %q (want msg, sem or shm)", s)
}

// Kind is what an operation does.
type Kind uint8

// Operations of the ids subsystem.
const (
	// KindGet is msgget/semget/shmget: look a key up, or create an object.
	KindGet Kind = iota + 1
	// KindRmid is *ctl(IPC_RMID) on an id.
	KindRmid
	// KindStat is *ctl(IPC_STAT) on an id: key, mode, owner, size.
	KindStat
	// KindNextID writes /proc/sys/kernel/<type>_next_id.
	KindNextID
	// KindLimit writes the per-namespace object limit (msgmni, semmni, shmmni).
	KindLimit
	// KindList reads /proc/sysvipc/<type> in full: ids and keys in iteration order.
	KindList
)

var kindNames = map[Kind]string{
	KindGet: "get", KindRmid: "rmid", KindStat: "stat", KindNextID: "next_id", KindLimit: "limit", KindList: "list",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Limits of the id space in the kernel's normal mode (no ipcmni_extend).
const (
	IPCMNI     = 32768 // slots per type; idx has 15 bits
	IDShift    = 15
	SeqMax     = 65535 // INT_MAX >> 15
	MinCycle   = 64    // RADIX_TREE_MAP_SIZE: the smallest cyclic window
	IPCPrivate = 0
)

// Default per-namespace limits of a fresh IPC namespace.
const (
	DefaultMsgmni = 32000
	DefaultSemmni = 32000
	DefaultShmmni = 4096
	DefaultSemmsl = 32000
	DefaultSemmns = 1024000000
)

// DefaultLimit returns the object limit a fresh namespace has for t.
func DefaultLimit(t IPCType) int64 {
	switch t {
	case Msg:
		return DefaultMsgmni
	case Sem:
		return DefaultSemmni
	}
	return DefaultShmmni
}

// IDIdx returns the slot index of an id.
func IDIdx(id int64) int { return int(id & (IPCMNI - 1)) }

// IDSeq returns the sequence number of an id.
func IDSeq(id int64) int { return int(id >> IDShift) }

// MakeID builds an id from a sequence number and a slot index.
func MakeID(seq, idx int) int64 { return int64(seq)<<IDShift + int64(idx) }

// Ref names an object: by handle (the id bound by an earlier get) or by a
// literal id. Handles let one script run unchanged on implementations that
// number objects differently.
type Ref struct {
	Handle int   // > 0: the handle; 0: use ID
	ID     int64 // the literal id when Handle == 0
}

// Op is one operation of a script.
type Op struct {
	Kind  Kind
	Type  IPCType
	Bind  int    // KindGet: handle bound to the returned id on success (0: none)
	Obj   Ref    // KindRmid, KindStat
	Key   int32  // KindGet
	Creat bool   // KindGet: IPC_CREAT
	Excl  bool   // KindGet: IPC_EXCL
	Mode  uint16 // KindGet: permission bits, 0..0777
	Size  int64  // KindGet: shm size in bytes, sem nsems; unused for msg
	Value int64  // KindNextID, KindLimit, KindRmidForced; the new owner of shmctl IPC_SET
	As    uint32 // the caller's uid and gid; 0 is root with every capability but CAP_SYS_RESOURCE

	Task  uint8  // the task issuing the operation, 0..MaxTask (0: the script's main task)
	Att   int    // KindShmat: attachment handle bound on success; KindShmdt: the handle detached
	Cmd   ShmCmd // KindShmctl
	Flags uint8  // KindShmat: ShmatRdonly, ShmatExec, ShmatBadAddr
	Rows  bool   // KindList: full rows (Result.Rows) instead of id:key entries

	Mtype    int64  // KindMsgsnd: mtype; KindMsgrcv: msgtyp
	Fill     uint8  // KindMsgsnd: the text is MsgText(Fill, Size)
	MsgFlags uint8  // KindMsgsnd, KindMsgrcv: MsgNowait, MsgNoerror, MsgExcept, MsgCopy
	MCmd     MsgCmd // KindMsgctl (IPC_SET: Op.Value is qbytes, Op.Mode the mode)
}

// Object is one live IPC object as a listing or IPC_STAT shows it.
type Object struct {
	ID    int64
	Key   int32
	Mode  uint16 // the 0777 bits
	Owner uint32 // uid = cuid, gid = cgid
	Size  int64  // shm segment size, sem nsems, 0 for msg
}

// Entry is one row of a /proc/sysvipc listing as the ids subsystem sees it.
type Entry struct {
	ID  int64
	Key int32
}

// Result is what one operation returned.
type Result struct {
	Err  Errno
	ID   int64   // KindGet on success
	Obj  Object  // KindStat on success (ID is left 0: IPC_STAT does not report it)
	List []Entry // KindList on success, in iteration order
	// ID is also the return value of shmctl SHM_STAT (the full id) and of
	// IPC_INFO and SHM_INFO (the highest idx in use, or 0).
	Row  Row     // shmctl IPC_STAT, SHM_STAT, SHM_STAT_ANY on success
	Rows []Row   // KindList with Rows on success, in iteration order
	Info ShmInfo // shmctl IPC_INFO, SHM_INFO on success

	// The msg subsystem. Blocked: the call sleeps (its task is busy until a
	// later operation completes it). Done: tasks asleep in earlier calls
	// that returned during this operation, in task order.
	Blocked bool
	Msg     Message // msgrcv on success
	Qbytes  int64   // msgctl IPC_STAT, MSG_STAT, MSG_STAT_ANY (Row has the rest)
	MsgInfo MsgInfo // msgctl IPC_INFO, MSG_INFO
	Done    []Completion
	// Alternatives is how many distinct results a model allowed for this
	// operation (0 or 1: one; more: woken tasks raced). It is a statistic,
	// not part of the result: equivalence and the text form ignore it.
	Alternatives int
}

// TypeState is the observable state of one IPC type.
type TypeState struct {
	Objects []Object // live objects in ascending idx order
	NextID  int64    // the pending <type>_next_id request, -1 when none
	Limit   int64    // msgmni, semmni or shmmni
}

// Snapshot is the whole observable state of an implementation.
type Snapshot struct {
	IDs [len(IPCTypes)]TypeState
	// Rows holds every live object of each type as /proc/sysvipc shows it,
	// in ascending idx order.
	Rows [len(IPCTypes)][]Row
	Shm  ShmState
	// Queues holds every message queue's messages and sleepers, in
	// ascending idx order.
	Queues []QueueState
}

// ObjectsOf returns the live objects of one type.
func (s *Snapshot) ObjectsOf(t IPCType) []Object { return s.IDs[t].Objects }
