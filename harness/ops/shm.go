package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operations of the shm subsystem (ipc/shm.c).
const (
	// KindShmat is shmat(id, 0, flags) by a task; it binds an attachment
	// handle (Op.Bind, class ClassAttachment) on success.
	KindShmat Kind = 16 + iota
	// KindShmdt is shmdt of the address an attachment handle (Op.Att) got.
	// A handle that is not attached (detached, or its task exited) is
	// detached at an address where nothing is attached: EINVAL.
	KindShmdt
	// KindShmctl is shmctl(id, Op.Cmd, buf).
	KindShmctl
	// KindRmidForced writes /proc/sys/kernel/shm_rmid_forced (Op.Value).
	KindRmidForced
)

// ShmCmd is the command of a shmctl.
type ShmCmd uint8

// The shmctl commands the vocabulary has (IPC_RMID is KindRmid).
const (
	ShmIPCStat ShmCmd = iota + 1 // IPC_STAT: the row of the segment, ID 0
	ShmIPCSet                    // IPC_SET: Op.Mode and the owner Op.Value (uid = gid)
	ShmLock                      // SHM_LOCK
	ShmUnlock                    // SHM_UNLOCK
	ShmIPCInfo                   // IPC_INFO: struct shminfo64, returns the max idx
	ShmInfoCmd                   // SHM_INFO: struct shm_info, returns the max idx
	ShmStat                      // SHM_STAT on an index: the row, returns the full id
	ShmStatAny                   // SHM_STAT_ANY on an index: SHM_STAT without the read check
	ShmInvalid                   // the command number -1, which no kernel has: EINVAL
)

var shmCmdNames = []enumName[ShmCmd]{
	{ShmIPCStat, "stat"}, {ShmIPCSet, "set"}, {ShmLock, "lock"}, {ShmUnlock, "unlock"},
	{ShmIPCInfo, "ipc_info"}, {ShmInfoCmd, "shm_info"}, {ShmStat, "shm_stat"}, {ShmStatAny, "shm_stat_any"},
	{ShmInvalid, "invalid"},
}

func (c ShmCmd) String() string {
	for _, n := range shmCmdNames {
		if n.v == c {
			return n.name
		}
	}
	return fmt.Sprintf("cmd%d", uint8(c))
}

// Bits of the shm mode beyond the 0777 permissions.
const (
	ShmDest   = 0o1000 // SHM_DEST: removed, destroyed at the last detach
	ShmLocked = 0o2000 // SHM_LOCKED: SHM_LOCK is in effect
)

// Flags of shmat.
const (
	ShmatRdonly  = 1 << iota // SHM_RDONLY
	ShmatExec                // SHM_EXEC
	ShmatBadAddr             // an address that is not page-aligned, without SHM_RND: EINVAL
)

// Tasks. Task 0 is the script's main task; tasks 1..MaxTask are extra
// processes that come into existence at their first operation, so a script
// pays only for the tasks it names.
const (
	MaxTask  = 15
	NumTasks = MaxTask + 1
)

// PID is a process id as results and rows show it: a task identity, never a
// raw pid. 0 is "no process" (the kernel's 0); PIDUnknown is a pid that is
// no task of the script, which can never equal a task.
type PID int32

// PIDUnknown is a pid that belongs to no task of the script.
const PIDUnknown PID = -1

// TaskPID is the identity of incarnation gen (0 for the first, one more after
// every exit) of task.
func TaskPID(task, gen int) PID { return PID(1 + task + gen*NumTasks) }

// Task returns the task number of a task identity.
func (p PID) Task() int { return int(p-1) % NumTasks }

// Gen returns the incarnation of a task identity.
func (p PID) Gen() int { return int(p-1) / NumTasks }

func (p PID) String() string {
	switch {
	case p == 0:
		return "0"
	case p < 0:
		return "?"
	case p.Gen() == 0:
		return fmt.Sprintf("t%d", p.Task())
	}
	return fmt.Sprintf("t%d#%d", p.Task(), p.Gen())
}

// ParsePID reads what String writes.
func ParsePID(s string) (PID, error) {
	switch s {
	case "0":
		return 0, nil
	case "?":
		return PIDUnknown, nil
	}
	rest, ok := strings.CutPrefix(s, "t")
	if !ok {
		return 0, fmt.Errorf("pid %q: want 0, ?, tN or tN#G", s)
	}
	ts, gs, hasGen := strings.Cut(rest, "#")
	task, err := strconv.Atoi(ts)
	if err != nil || task < 0 || task > MaxTask {
		return 0, fmt.Errorf("pid %q: task must be t0..t%d", s, MaxTask)
	}
	gen := 0
	if hasGen {
		if gen, err = strconv.Atoi(gs); err != nil || gen <= 0 || gen > 1<<24 {
			return 0, fmt.Errorf("pid %q: bad incarnation", s)
		}
	}
	return TaskPID(task, gen), nil
}

// Row is one object as a /proc/sysvipc/<type> line shows it, with pids as
// task identities and times as set (non-zero) or not. IPC_STAT, SHM_STAT and
// SHM_STAT_ANY of a segment give the same fields (ID 0 for IPC_STAT).
//
// Per type: shm uses every field (Size = segsz, Cpid/Lpid, Atime/Dtime/Ctime,
// RSS and Swap in bytes); msg has Size = cbytes, Qnum, Cpid/Lpid = lspid/lrpid
// and Atime/Dtime/Ctime = stime/rtime/ctime; sem has Size = nsems and
// Atime/Ctime = otime/ctime.
type Row struct {
	Key                  int32
	ID                   int64
	Mode                 uint16 // with SHM_DEST and SHM_LOCKED
	Size                 int64
	Qnum                 int64
	Cpid, Lpid           PID
	Nattch               int64
	UID, GID, CUID, CGID uint32
	Atime, Dtime, Ctime  bool
	RSS, Swap            int64
}

// Object returns what the ids subsystem sees of a row.
func (r Row) Object(t IPCType) Object {
	o := Object{ID: r.ID, Key: r.Key, Mode: r.Mode & 0o777, Owner: r.UID, Size: r.Size}
	if t == Msg {
		o.Size = 0
	}
	return o
}

// ShmInfo is what IPC_INFO (shminfo64) or SHM_INFO (shm_info) fills in; the
// fields of the other command stay 0.
type ShmInfo struct {
	Shmmax, Shmmin, Shmmni, Shmseg, Shmall uint64 // IPC_INFO
	UsedIDs, ShmTot, ShmRss, ShmSwp        int64  // SHM_INFO (pages)
	SwapAttempts, SwapSuccesses            int64  // SHM_INFO, always 0
}

// Attachment is one live attachment of a segment: the handle its shmat
// bound, the task (incarnation) that holds it, and the segment's id.
//
// An attachment at a window address is shown per VMA, as the task's maps
// show it: At is 1 + the window page the VMA starts at and Pages its
// length (a SHM_REMAP over part of an attachment splits it); both are 0
// for an attachment where the kernel chose the address.
type Attachment struct {
	Att   int
	Task  PID
	ID    int64
	At    int64
	Pages int64
	// NS is the IPC namespace of the segment: 0 for the script's, k for
	// the one the script's k-th unshare made (NamespaceState.Seq).
	NS int
}

// ShmState is the namespace-wide shm state of a snapshot.
type ShmState struct {
	RmidForced  int64 // kernel.shm_rmid_forced
	Tot         int64 // shm_tot, pages in use
	Attachments []Attachment
}

// DefaultShmmax and DefaultShmall are the shmmax and shmall of a fresh
// namespace (ULONG_MAX - 2^24); ShmSegMin is SHMMIN.
const (
	DefaultShmmax = ^uint64(0) - 1<<24
	DefaultShmall = ^uint64(0) - 1<<24
	ShmSegMin     = 1
	PageSize      = 4096
)

// Pages returns the number of pages a segment of size bytes uses.
func Pages(size int64) int64 { return int64((uint64(size) + PageSize - 1) / PageSize) }

// rowColumns names the fields of a row of each type, in the order of the
// /proc/sysvipc/<type> columns.
var rowColumns = [...][]string{
	Msg: {"key", "msqid", "perms", "cbytes", "qnum", "lspid", "lrpid", "uid", "gid", "cuid", "cgid", "stime", "rtime", "ctime"},
	Sem: {"key", "semid", "perms", "nsems", "uid", "gid", "cuid", "cgid", "otime", "ctime"},
	Shm: {"key", "shmid", "perms", "size", "cpid", "lpid", "nattch", "uid", "gid", "cuid", "cgid", "atime", "dtime", "ctime", "rss", "swap"},
}

// RowColumns returns the column names of a /proc/sysvipc/<t> line.
func RowColumns(t IPCType) []string { return rowColumns[t] }

// rowField returns pointers to the field of r each column of t holds.
func rowFields(t IPCType, r *Row) []any {
	switch t {
	case Msg:
		return []any{&r.Key, &r.ID, &r.Mode, &r.Size, &r.Qnum, &r.Cpid, &r.Lpid, &r.UID, &r.GID, &r.CUID, &r.CGID, &r.Atime, &r.Dtime, &r.Ctime}
	case Sem:
		return []any{&r.Key, &r.ID, &r.Mode, &r.Size, &r.UID, &r.GID, &r.CUID, &r.CGID, &r.Atime, &r.Ctime}
	}
	return []any{&r.Key, &r.ID, &r.Mode, &r.Size, &r.Cpid, &r.Lpid, &r.Nattch, &r.UID, &r.GID, &r.CUID, &r.CGID, &r.Atime, &r.Dtime, &r.Ctime, &r.RSS, &r.Swap}
}

// FormatRow writes a row in the column order of /proc/sysvipc/<t>, one
// space between fields: the key in hex, the mode in octal, pids as task
// identities and times as "*" (set) or "0".
func FormatRow(t IPCType, r Row) string {
	fs := rowFields(t, &r)
	parts := make([]string, len(fs))
	for i, f := range fs {
		switch v := f.(type) {
		case *int32:
			parts[i] = formatKey(*v)
		case *int64:
			parts[i] = strconv.FormatInt(*v, 10)
		case *uint16:
			parts[i] = fmt.Sprintf("%o", *v)
		case *uint32:
			parts[i] = strconv.FormatUint(uint64(*v), 10)
		case *PID:
			parts[i] = v.String()
		case *bool:
			parts[i] = "0"
			if *v {
				parts[i] = "*"
			}
		}
	}
	return strings.Join(parts, " ")
}

// ParseRow reads what FormatRow writes.
func ParseRow(t IPCType, text string) (Row, error) {
	var r Row
	f := strings.Fields(text)
	fs := rowFields(t, &r)
	if len(f) != len(fs) {
		return r, fmt.Errorf("%s row %q: want %d fields (%s)", t, text, len(fs), strings.Join(rowColumns[t], " "))
	}
	for i, p := range fs {
		var err error
		switch v := p.(type) {
		case *int32:
			*v, err = parseKey(f[i])
		case *int64:
			*v, err = strconv.ParseInt(f[i], 10, 64)
		case *uint16:
			var m uint64
			m, err = strconv.ParseUint(f[i], 8, 16)
			*v = uint16(m)
		case *uint32:
			var u uint64
			u, err = strconv.ParseUint(f[i], 10, 32)
			*v = uint32(u)
		case *PID:
			*v, err = ParsePID(f[i])
		case *bool:
			switch f[i] {
			case "*":
				*v = true
			case "0":
			default:
				err = fmt.Errorf("want * or 0")
			}
		}
		if err != nil {
			return r, fmt.Errorf("%s row field %s %q: %v", t, rowColumns[t][i], f[i], err)
		}
	}
	return r, nil
}

// SortAttachments puts attachments in the canonical snapshot order: by task,
// handle, then segment id.
func SortAttachments(as []Attachment) {
	slices.SortFunc(as, func(x, y Attachment) int {
		switch {
		case x.Task != y.Task:
			return int(x.Task) - int(y.Task)
		case x.Att != y.Att:
			return x.Att - y.Att
		case x.ID != y.ID:
			return cmpInt64(x.ID, y.ID)
		case x.At != y.At:
			return cmpInt64(x.At, y.At)
		case x.Pages != y.Pages:
			return cmpInt64(x.Pages, y.Pages)
		}
		return x.NS - y.NS
	})
}

// shmInfoResult is the result of shmctl IPC_INFO (shminfo64) or SHM_INFO
// (shm_info): the return value and every field of that command's structure.
func shmInfoResult(cmd ShmCmd) fieldsResult {
	u := func(name string, p func(*ShmInfo) *uint64) valueOf {
		return valueOf{name, u64(func(r *Result) *uint64 { return p(&r.Info) })}
	}
	i := func(name string, p func(*ShmInfo) *int64) valueOf {
		return valueOf{name, dec(func(r *Result) *int64 { return p(&r.Info) }, -1<<63, 1<<63-1, 0)}
	}
	if cmd == ShmIPCInfo {
		return fieldsResult{ret,
			u("shmmax", func(in *ShmInfo) *uint64 { return &in.Shmmax }),
			u("shmmin", func(in *ShmInfo) *uint64 { return &in.Shmmin }),
			u("shmmni", func(in *ShmInfo) *uint64 { return &in.Shmmni }),
			u("shmseg", func(in *ShmInfo) *uint64 { return &in.Shmseg }),
			u("shmall", func(in *ShmInfo) *uint64 { return &in.Shmall }),
		}
	}
	return fieldsResult{ret,
		i("used_ids", func(in *ShmInfo) *int64 { return &in.UsedIDs }),
		i("shm_tot", func(in *ShmInfo) *int64 { return &in.ShmTot }),
		i("shm_rss", func(in *ShmInfo) *int64 { return &in.ShmRss }),
		i("shm_swp", func(in *ShmInfo) *int64 { return &in.ShmSwp }),
		i("swap_attempts", func(in *ShmInfo) *int64 { return &in.SwapAttempts }),
		i("swap_successes", func(in *ShmInfo) *int64 { return &in.SwapSuccesses }),
	}
}

// shmRowResult is the result of shmctl IPC_STAT and SHM_STAT*: the row,
// whose id is also the return value (0 for IPC_STAT).
type shmRowResult struct{}

func (shmRowResult) format(_ *Op, r *Result) string { return rowField{Shm}.format(r) }

func (shmRowResult) parse(_ *Op, r *Result, text string) error {
	if err := (rowField{Shm}).parse(r, text); err != nil {
		return err
	}
	r.ID = r.Row.ID
	return nil
}

var (
	shmIPCInfoResult = shmInfoResult(ShmIPCInfo)
	shmInfoCmdResult = shmInfoResult(ShmInfoCmd)
)

func shmctlResult(op *Op) ResultForm {
	switch op.Cmd {
	case ShmIPCStat, ShmStat, ShmStatAny:
		return shmRowResult{}
	case ShmIPCInfo:
		return shmIPCInfoResult
	case ShmInfoCmd:
		return shmInfoCmdResult
	}
	return okResult{}
}

func isShmSet(o *Op) bool { return o.Cmd == ShmIPCSet }

func init() {
	shm := []IPCType{Shm}
	register(SubsystemSpec{Name: "shm", Uses: []string{"ids", "tasks", "shm"}},
		KindSpec{Kind: KindShmat, Name: "shmat", Doc: "shmat by the task, at NULL or at=ADDR (the result at=w:P says where it landed); binds aN to the attachment", Subsystem: "shm", Types: shm, Binds: ClassAttachment, Task: true, As: true,
			Args: []Arg{argObject,
				flagBit("rdonly", func(o *Op) *uint8 { return &o.Flags }, ShmatRdonly),
				flagBit("exec", func(o *Op) *uint8 { return &o.Flags }, ShmatExec),
				flagBit("badaddr", func(o *Op) *uint8 { return &o.Flags }, ShmatBadAddr),
				shmatArgAddr,
				flagBit("rnd", func(o *Op) *uint8 { return &o.Flags }, ShmatRnd),
				flagBit("remap", func(o *Op) *uint8 { return &o.Flags }, ShmatRemap),
			},
			Result: shmatResult{}, Check: checkShmat,
		},
		KindSpec{Kind: KindShmdt, Name: "shmdt", Doc: "shmdt of an attachment's address or of an address (EINVAL where no attachment starts)", Subsystem: "shm", Types: shm, Task: true,
			Args: []Arg{shmAddrArg}},
		KindSpec{Kind: KindShmctl, Name: "shmctl", Doc: "shmctl with a command (set takes owner=, mode= and gid=; shm_stat and shm_stat_any take an index as id=N)", Subsystem: "shm", Types: shm, Task: true, As: true,
			Reads: func(op Op) bool {
				return op.Cmd == ShmIPCStat || op.Cmd == ShmIPCInfo || op.Cmd == ShmInfoCmd || op.Cmd == ShmStat || op.Cmd == ShmStatAny
			},
			Args: []Arg{argObject,
				pos(enum(func(o *Op) *ShmCmd { return &o.Cmd }, shmCmdNames)),
				named("owner", dec(func(o *Op) *int64 { return &o.Value }, 0, 1<<32-1, 0)).When(isShmSet),
				argMode.When(isShmSet),
				argGroup.When(isShmSet),
				argBadBuf,
			},
			OpaqueIDs: func(op Op) bool { return op.Cmd >= ShmIPCInfo },
			Result:    byOp(shmctlResult),
		},
		KindSpec{Kind: KindRmidForced, Name: "rmid_forced", Doc: "write /proc/sys/kernel/shm_rmid_forced", Subsystem: "shm", Types: shm, As: true, Args: []Arg{argValue}},
	)
}

func cmpInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
