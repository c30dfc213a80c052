package ops

import (
	"fmt"
	"strconv"
	"strings"
)

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
	return 0, fmt.Errorf("unknown IPC type %q (want msg, sem or shm)", clip(s))
}

// Operations of the ids subsystem: the SysV IPC id allocator and the
// /proc/sysvipc listings.
const (
	// KindGet is msgget/semget/shmget: look a key up, or create an object.
	KindGet Kind = 1 + iota
	// KindRmid is *ctl(IPC_RMID) on an id.
	KindRmid
	// KindStat is *ctl(IPC_STAT) on an id: key, mode, owner, size.
	KindStat
	// KindNextID writes /proc/sys/kernel/<type>_next_id.
	KindNextID
	// KindLimit writes the per-namespace object limit (msgmni, semmni, shmmni).
	KindLimit
	// KindList reads /proc/sysvipc/<type> in full: ids and keys (or whole
	// rows) in iteration order.
	KindList
	// KindChurn creates an IPC_PRIVATE object and removes it again, Value
	// times, for real: the cheap way for a script to move the allocator far
	// (its cursor around the window, seq up to its wrap). Its result is the
	// id of the last object it made.
	KindChurn
)

// KindFill creates Value IPC_PRIVATE objects (mode 0600, size 1, one
// semaphore), for real, and keeps them: the cheap way for a script to make a
// table large (the cyclic window grows past 64 live objects, max_idx climbs,
// the limits are reached). Its result is the id of the last object it made;
// an object it cannot make ends it with that error, and the objects made
// before stay. The objects have no handles: a listing or a stat by id shows
// them. It is outside the ids range 1-7, which was full.
const KindFill Kind = 96

// KindReadNextID reads /proc/sys/kernel/<type>_next_id back: its result
// (ret=) is the value, -1 unless a write is still waiting for a get.
const KindReadNextID Kind = 97

// Limits of the id space in the kernel's normal mode (no ipcmni_extend).
const (
	IPCMNI     = 32768 // slots per type; idx has 15 bits
	IDShift    = 15
	SeqMax     = 65535 // INT_MAX >> 15
	MinCycle   = 64    // RADIX_TREE_MAP_SIZE: the smallest cyclic window
	IPCPrivate = 0
	// MaxChurn is the most create/remove cycles one churn may ask for: a
	// little more than it takes to wrap seq once with an empty namespace.
	MaxChurn = 1 << 23
	// MaxFill is the most objects one fill may ask for: every slot of a type.
	MaxFill = IPCMNI
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

// TypeState is the observable state of one IPC type.
type TypeState struct {
	Objects []Object // live objects in ascending idx order
	NextID  int64    // the pending <type>_next_id request, -1 when none
	Limit   int64    // msgmni, semmni or shmmni
	// MaxIdx is what IPC_INFO returns for the type: ipc_get_maxidx, the
	// highest idx in use (every slot's last one when the table is full), 0
	// when there is none. A removal of the object at max_idx lowers it to
	// the next object in use.
	MaxIdx int64
}

var allTypes = []IPCType{Msg, Sem, Shm}

// Fields of Op shared by the IPC kinds.
var (
	argObject = objectRef(func(o *Op) *Ref { return &o.Obj })
	argValue  = pos(dec(func(o *Op) *int64 { return &o.Value }, -1<<63, 1<<63-1, 0))
	argMode   = named("mode", octal(func(o *Op) *uint16 { return &o.Mode }, 0o777, 0o600))
)

func init() {
	register(SubsystemSpec{Name: "ids", Uses: []string{"ids"}},
		KindSpec{Kind: KindGet, Name: "get", Doc: "msgget/semget/shmget: look a key up or create (size: the segment's bytes, the array's nsems); binds hN to the id", Subsystem: "ids", Types: allTypes, Binds: ClassObject, Task: true, As: true,
			Args: []Arg{
				named("key", hex(func(o *Op) *int32 { return &o.Key })),
				flagBool("creat", func(o *Op) *bool { return &o.Creat }),
				flagBool("excl", func(o *Op) *bool { return &o.Excl }),
				argMode,
				named("size", dec(func(o *Op) *int64 { return &o.Size }, -1<<63, 1<<63-1, 1)).Optional(),
				flagBool("hugetlb", func(o *Op) *bool { return &o.Huge }).When(func(o *Op) bool { return o.Type == Shm }),
			},
			Result: fieldsResult{{"id", dec(func(r *Result) *int64 { return &r.ID }, -1<<63, 1<<63-1, 0)}},
		},
		KindSpec{Kind: KindRmid, Name: "rmid", Removes: true, Doc: "*ctl(IPC_RMID)", Subsystem: "ids", Types: allTypes, Task: true, As: true, Args: []Arg{argObject}},
		KindSpec{Kind: KindStat, Name: "stat", Doc: "*ctl(IPC_STAT): key, mode, owner, size", Subsystem: "ids", Types: allTypes, Task: true, As: true, Args: []Arg{argObject},
			Observes: true,
			Result: fieldsResult{
				{"key", hex(func(r *Result) *int32 { return &r.Obj.Key })},
				{"mode", octal(func(r *Result) *uint16 { return &r.Obj.Mode }, 0o7777, 0)},
				{"owner", dec(func(r *Result) *uint32 { return &r.Obj.Owner }, 0, 1<<32-1, 0)},
				{"size", dec(func(r *Result) *int64 { return &r.Obj.Size }, -1<<63, 1<<63-1, 0)},
			},
		},
		KindSpec{Kind: KindNextID, Name: "next_id", Doc: "write /proc/sys/kernel/<type>_next_id", Subsystem: "ids", Types: allTypes, As: true, Args: []Arg{argValue}},
		KindSpec{Kind: KindReadNextID, Name: "read_next_id", Doc: "read /proc/sys/kernel/<type>_next_id back (ret=N; -1 once a get has used it)", Subsystem: "ids", Types: allTypes,
			Result: fieldsResult{ret}, Observes: true},
		KindSpec{Kind: KindLimit, Name: "limit", Doc: "write the namespace's object limit (msgmni, semmni, shmmni)", Subsystem: "ids", Types: allTypes, As: true, Args: []Arg{argValue}},
		KindSpec{Kind: KindList, Name: "list", Doc: "read /proc/sysvipc/<type> in full: id:key pairs, or whole rows with rows", Subsystem: "ids", Types: allTypes, As: true,
			Args:     []Arg{flagBool("rows", func(o *Op) *bool { return &o.Rows })},
			Result:   listResult{},
			Observes: true,
		},
		KindSpec{Kind: KindChurn, Name: "churn", Doc: "create an IPC_PRIVATE object and remove it, N times, for real (moves the allocator's cursor and seq far)", Subsystem: "ids", Types: allTypes, As: true, OpaqueIDs: func(Op) bool { return true },
			Cost:   func(op Op) int64 { return max(op.Value, 1) },
			Args:   []Arg{pos(decCoarse(func(o *Op) *int64 { return &o.Value }, 1, MaxChurn, 1))},
			Result: fieldsResult{{"id", dec(func(r *Result) *int64 { return &r.ID }, -1<<63, 1<<63-1, 0)}},
		},
		KindSpec{Kind: KindFill, Name: "fill", Doc: "create N IPC_PRIVATE objects (mode 0600, size 1) that stay, for real (a large table in one op; compare it exactly: its objects have no handles)", Subsystem: "ids", Types: allTypes, As: true, OpaqueIDs: func(Op) bool { return true },
			Cost:   func(op Op) int64 { return max(op.Value, 1) },
			Args:   []Arg{pos(decCoarse(func(o *Op) *int64 { return &o.Value }, 1, MaxFill, 1))},
			Result: fieldsResult{{"id", dec(func(r *Result) *int64 { return &r.ID }, -1<<63, 1<<63-1, 0)}},
		},
	)
}

// bracketList writes parts joined by sep in brackets: "[a b c]".
func bracketList(parts []string, sep string) string {
	return "[" + strings.Join(parts, sep) + "]"
}

// bracketed returns what stands between the "[" that starts text and the
// "]" that ends it; ok is false where text is not so enclosed.
func bracketed(text string) (inner string, ok bool) {
	inner, ok = strings.CutPrefix(text, "[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	return inner, ok && ok2
}

// listResult is a listing: "[id:key ...]", or with rows "[row | row]".
type listResult struct{}

func (listResult) format(op *Op, r *Result) string {
	if op.Rows {
		parts := make([]string, len(r.Rows))
		for i, row := range r.Rows {
			parts[i] = FormatRow(op.Type, row)
		}
		return bracketList(parts, " | ")
	}
	parts := make([]string, len(r.List))
	for i, e := range r.List {
		parts[i] = strconv.FormatInt(e.ID, 10) + ":" + formatKey(e.Key)
	}
	return bracketList(parts, " ")
}

func (listResult) parse(op *Op, r *Result, text string) error {
	inner, ok := bracketed(text)
	if !ok {
		return fmt.Errorf("list result %q: want [id:key ...]", clip(text))
	}
	if strings.TrimSpace(inner) == "" {
		return nil
	}
	if op.Rows {
		for _, part := range strings.Split(inner, "|") {
			row, err := ParseRow(op.Type, strings.TrimSpace(part))
			if err != nil {
				return err
			}
			r.Rows = append(r.Rows, row)
		}
		return nil
	}
	for _, e := range strings.Fields(inner) {
		ids, keys, ok := strings.Cut(e, ":")
		id, err := strconv.ParseInt(ids, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("list entry %q: want id:key", clip(e))
		}
		key, err := parseKey(keys)
		if err != nil {
			return err
		}
		r.List = append(r.List, Entry{ID: id, Key: key})
	}
	return nil
}
