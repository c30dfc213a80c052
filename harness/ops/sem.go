package ops

import (
	"fmt"
	"strconv"
	"strings"
)

// Operations of the sem subsystem (ipc/sem.c). A semop issued by task
// t1..t15 may block; its task then sleeps until a later operation completes
// it, and that completion is reported in the later operation's result, as
// for msg.
const (
	// KindSemop is semop(id, sops, nsops), or semtimedop with the timeout
	// Op.Sem.Timeout names.
	KindSemop Kind = 48 + iota
	// KindSemctl is semctl(id, num, cmd, arg); IPC_RMID is KindRmid.
	KindSemctl
	// KindSemLimits writes /proc/sys/kernel/sem: semmsl semmns semopm semmni.
	KindSemLimits
)

// Scripts hold at most this many sops in one semop and this many values in
// one SETALL (an array of more semaphores gets zeros for the rest).
const (
	SemMaxSops = 8
	SemMaxVals = 16 // LTP's arrays have 10
)

// Limits of the sem subsystem.
const (
	SemVMX        = 32767 // the largest value of a semaphore
	DefaultSemopm = 500
	SemMaxNum     = 65535 // sem_num is an unsigned short
)

// Flags of a sop (sem_flg).
const (
	SemNowait = 1 << iota // IPC_NOWAIT
	SemUndo               // SEM_UNDO
)

// Sop is one struct sembuf.
type Sop struct {
	Num   uint16
	Op    int16
	Flags uint8 // SemNowait, SemUndo
}

// SemTimeout is the timeout of a semtimedop.
type SemTimeout uint8

// The timeouts a script can give: none (semop), zero (a sleeper times out
// at once: EAGAIN), and two invalid timespecs (EINVAL).
const (
	SemNoTimeout SemTimeout = iota
	SemZeroTimeout
	SemBadNsec   // tv_nsec = 1e9
	SemNegSecond // tv_sec = -1
	SemBadPtr    // a timeout pointer certainly unmapped (BadAddress): EFAULT first
)

var semTimeoutNames = []enumName[SemTimeout]{
	{SemNoTimeout, "none"}, {SemZeroTimeout, "zero"}, {SemBadNsec, "bad_nsec"}, {SemNegSecond, "negative"}, {SemBadPtr, "bad_ptr"},
}

// SemCmd is the command of a semctl.
type SemCmd uint8

// The semctl commands the vocabulary has (IPC_RMID is KindRmid).
const (
	SemIPCStat SemCmd = iota + 1 // IPC_STAT: the row
	SemIPCSet                    // IPC_SET: Op.Mode and the owner Op.Value
	SemIPCInfo                   // IPC_INFO: struct seminfo, returns the max idx
	SemInfoCmd                   // SEM_INFO: struct seminfo with the usage
	SemStat                      // SEM_STAT on an index: the row, returns the full id
	SemStatAny                   // SEM_STAT_ANY: SEM_STAT without the read check
	SemGetVal                    // GETVAL of Op.Sem.Num
	SemGetPid                    // GETPID of Op.Sem.Num
	SemGetNcnt                   // GETNCNT of Op.Sem.Num
	SemGetZcnt                   // GETZCNT of Op.Sem.Num
	SemGetAll                    // GETALL
	SemSetVal                    // SETVAL of Op.Sem.Num to Op.Sem.Val
	SemSetAll                    // SETALL to Op.Sem.Vals
	SemInvalid                   // the command number -1, which no kernel has: EINVAL
)

var semCmdNames = []enumName[SemCmd]{
	{SemIPCStat, "stat"}, {SemIPCSet, "set"}, {SemIPCInfo, "ipc_info"}, {SemInfoCmd, "sem_info"},
	{SemStat, "sem_stat"}, {SemStatAny, "sem_stat_any"}, {SemGetVal, "getval"}, {SemGetPid, "getpid"},
	{SemGetNcnt, "getncnt"}, {SemGetZcnt, "getzcnt"}, {SemGetAll, "getall"}, {SemSetVal, "setval"}, {SemSetAll, "setall"},
	{SemInvalid, "invalid"},
}

func (c SemCmd) String() string {
	for _, n := range semCmdNames {
		if n.v == c {
			return n.name
		}
	}
	return fmt.Sprintf("cmd%d", uint8(c))
}

// SemArgs are the values of the sem operations.
type SemArgs struct {
	Sops    [SemMaxSops]Sop // semop: the first NSops
	NSops   uint8
	Timeout SemTimeout // semop
	Cmd     SemCmd     // semctl
	Num     int64      // semctl: semnum of GETVAL, GETPID, GETNCNT, GETZCNT, SETVAL
	Val     int64      // semctl SETVAL
	Vals    [SemMaxVals]int64
	NVals   uint8    // semctl SETALL: the first NVals values of Vals
	Limits  [4]int64 // sem_limits: semmsl, semmns, semopm, semmni
}

// SopList returns the sops of a semop.
func (a *SemArgs) SopList() []Sop { return a.Sops[:min(int(a.NSops), SemMaxSops)] }

// ValList returns the values of a SETALL.
func (a *SemArgs) ValList() []int64 { return a.Vals[:min(int(a.NVals), SemMaxVals)] }

// SemResult is what the sem operations return beyond the common part.
type SemResult struct {
	Vals []int64 // GETALL
	Pid  PID     // GETPID
	Info SemInfo // IPC_INFO, SEM_INFO
}

// SemInfo is struct seminfo.
type SemInfo struct {
	Semmap, Semmni, Semmns, Semmnu, Semmsl, Semopm, Semume, Semusz, Semvmx, Semaem int64
}

// SemState is one semaphore array in a snapshot: every value, the pid of
// the last operation on each semaphore, how many tasks wait for each to
// grow and to be zero, and which tasks sleep on the array (a set, sorted).
type SemState struct {
	ID       int64
	Vals     []int64
	Pids     []PID
	Ncnt     []int64
	Zcnt     []int64
	Sleepers []uint8
}

// SemLimits are the four values of kernel.sem in a snapshot.
type SemLimits struct {
	Semmsl, Semmns, Semopm, Semmni int64
	UsedSems                       int64 // semaphores in use (SEM_INFO's semaem)
}

// sopsField reads and writes the sops of a semop: "0:-1:undo,1:+1:nowait",
// or "none" for a call with nsops 0.
type sopsField struct{}

func (sopsField) format(o *Op) string {
	if o.Sem.NSops == 0 {
		return "none"
	}
	var parts []string
	for _, s := range o.Sem.SopList() {
		p := fmt.Sprintf("%d:%+d", s.Num, s.Op)
		if s.Op == 0 {
			p = fmt.Sprintf("%d:0", s.Num) // a wait for zero
		}
		if s.Flags&SemNowait != 0 {
			p += ":nowait"
		}
		if s.Flags&SemUndo != 0 {
			p += ":undo"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

func (sopsField) parse(o *Op, text string) error {
	if text == "none" {
		setSops(o, nil)
		return nil
	}
	parts := strings.Split(text, ",")
	if len(parts) > SemMaxSops {
		return fmt.Errorf("%d sops: scripts hold at most %d (lower semopm for E2BIG)", len(parts), SemMaxSops)
	}
	for i, p := range parts {
		f := strings.Split(p, ":")
		num, err1 := strconv.ParseUint(f[0], 10, 16)
		v, err2 := strconv.ParseInt(f[min(1, len(f)-1)], 10, 16)
		if len(f) < 2 || err1 != nil || err2 != nil || (f[1] != "0" && f[1][0] != '+' && f[1][0] != '-') {
			return fmt.Errorf("sop %q: want NUM:+N, NUM:-N or NUM:0, then :nowait, :undo", clip(p))
		}
		s := Sop{Num: uint16(num), Op: int16(v)}
		for _, flag := range f[2:] {
			switch {
			case flag == "nowait" && s.Flags&SemNowait == 0:
				s.Flags |= SemNowait
			case flag == "undo" && s.Flags&SemUndo == 0:
				s.Flags |= SemUndo
			default:
				return fmt.Errorf("sop %q: unknown or repeated flag %q", clip(p), clip(flag))
			}
		}
		o.Sem.Sops[i] = s
	}
	o.Sem.NSops = uint8(len(parts))
	return nil
}

func (sopsField) zero(o *Op) bool { return o.Sem.NSops == 0 }

func (sopsField) syntax() string { return "NUM:+N|-N|0[:nowait][:undo],...|none" }

// plainer drops a sop or a flag, or lowers a value toward 0 or a number
// toward 0.
func (sopsField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	sops := o.Sem.SopList()
	for i := range sops {
		if len(sops) > 1 {
			out = append(out, func(o *Op) {
				l := append([]Sop(nil), o.Sem.SopList()...)
				setSops(o, append(l[:i], l[i+1:]...))
			})
		}
		s := sops[i]
		for _, p := range []Sop{{s.Num, s.Op, 0}, {0, s.Op, s.Flags}, {s.Num, s.Op / 2, s.Flags}} {
			if p != s {
				out = append(out, func(o *Op) { o.Sem.Sops[i] = p })
			}
		}
	}
	return out
}

func setSops(o *Op, l []Sop) {
	o.Sem.Sops = [SemMaxSops]Sop{}
	copy(o.Sem.Sops[:], l)
	o.Sem.NSops = uint8(len(l))
}

// valsField reads and writes the values of a SETALL: "1,0,5".
type valsField struct{}

func (valsField) format(o *Op) string {
	var parts []string
	for _, v := range o.Sem.ValList() {
		parts = append(parts, strconv.FormatInt(v, 10))
	}
	return strings.Join(parts, ",")
}

func (valsField) parse(o *Op, text string) error {
	if text == "" { // no values: SETALL writes zeros to every semaphore
		o.Sem.NVals = 0
		return nil
	}
	parts := strings.Split(text, ",")
	if len(parts) > SemMaxVals {
		return fmt.Errorf("%d values: scripts hold at most %d", len(parts), SemMaxVals)
	}
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 32)
		if err != nil || v < 0 || v > 65535 {
			return fmt.Errorf("value %q: want 0..65535 (an unsigned short)", clip(p))
		}
		o.Sem.Vals[i] = v
	}
	o.Sem.NVals = uint8(len(parts))
	return nil
}

func (valsField) zero(o *Op) bool { return o.Sem.NVals == 0 }

func (valsField) syntax() string { return "V,V,..." }

func (valsField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	for i, v := range o.Sem.ValList() {
		if v != 0 {
			out = append(out, func(o *Op) { o.Sem.Vals[i] = 0 })
		}
	}
	return out
}

// semValsResult is GETALL's result: "[1 0 5]".
type semValsResult struct{}

func (semValsResult) format(_ *Op, r *Result) string {
	parts := make([]string, len(r.Sem.Vals))
	for i, v := range r.Sem.Vals {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return bracketList(parts, " ")
}

func (semValsResult) parse(_ *Op, r *Result, text string) error {
	inner, ok := bracketed(text)
	if !ok {
		return fmt.Errorf("getall result %q: want [v v ...]", clip(text))
	}
	for _, f := range strings.Fields(inner) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("getall value %q: %v", clip(f), err)
		}
		r.Sem.Vals = append(r.Sem.Vals, v)
	}
	return nil
}

func semInfoValue(name string, p func(*SemInfo) *int64) valueOf {
	return valueOf{name, dec(func(r *Result) *int64 { return p(&r.Sem.Info) }, -1<<63, 1<<63-1, 0)}
}

var (
	// semInfoResult is the result of semctl IPC_INFO and SEM_INFO.
	semInfoResult = fieldsResult{ret,
		semInfoValue("semmap", func(in *SemInfo) *int64 { return &in.Semmap }),
		semInfoValue("semmni", func(in *SemInfo) *int64 { return &in.Semmni }),
		semInfoValue("semmns", func(in *SemInfo) *int64 { return &in.Semmns }),
		semInfoValue("semmnu", func(in *SemInfo) *int64 { return &in.Semmnu }),
		semInfoValue("semmsl", func(in *SemInfo) *int64 { return &in.Semmsl }),
		semInfoValue("semopm", func(in *SemInfo) *int64 { return &in.Semopm }),
		semInfoValue("semume", func(in *SemInfo) *int64 { return &in.Semume }),
		semInfoValue("semusz", func(in *SemInfo) *int64 { return &in.Semusz }),
		semInfoValue("semvmx", func(in *SemInfo) *int64 { return &in.Semvmx }),
		semInfoValue("semaem", func(in *SemInfo) *int64 { return &in.Semaem }),
	}
	semStatResult = fieldsResult{ret, {"", rowField{Sem}}}
	semRetResult  = fieldsResult{ret}
	semPidResult  = fieldsResult{{"pid", pidField{}}}
)

// pidField is a pid written as a task identity.
type pidField struct{}

func (pidField) format(r *Result) string { return r.Sem.Pid.String() }

func (pidField) parse(r *Result, text string) error {
	p, err := ParsePID(text)
	r.Sem.Pid = p
	return err
}

func (pidField) zero(r *Result) bool { return r.Sem.Pid == 0 }

func (pidField) syntax() string { return "tN|0|?" }

func (pidField) plainer(*Result) []func(*Result) { return nil }

func semctlResult(op *Op) ResultForm {
	switch op.Sem.Cmd {
	case SemIPCStat, SemStat, SemStatAny:
		return semStatResult
	case SemIPCInfo, SemInfoCmd:
		return semInfoResult
	case SemGetVal, SemGetNcnt, SemGetZcnt:
		return semRetResult
	case SemGetPid:
		return semPidResult
	case SemGetAll:
		return semValsResult{}
	}
	return okResult{}
}

func semCmdIs(cmds ...SemCmd) func(*Op) bool {
	return func(o *Op) bool {
		for _, c := range cmds {
			if o.Sem.Cmd == c {
				return true
			}
		}
		return false
	}
}

// checkSemop: t0, the main task, must not sleep.
func checkSemop(op Op) error {
	if op.Task != 0 || op.Sem.Timeout != SemNoTimeout {
		return nil
	}
	for _, s := range op.Sem.SopList() {
		if s.Flags&SemNowait == 0 {
			return fmt.Errorf("t0 cannot sleep: give every sop :nowait, or timeout=zero, or use task=t1..t%d", MaxTask)
		}
	}
	return nil
}

func init() {
	sem := []IPCType{Sem}
	registerSnapshotPart(snapshotPart{rank: 40, name: "sem arrays", subsystem: "sem", format: formatSemState})
	register(SubsystemSpec{Name: "sem", Uses: []string{"ids", "tasks", "sem"}},
		KindSpec{Kind: KindSemop, Name: "semop", Doc: "semop (semtimedop with timeout=) of one or more sops; a task may block", Subsystem: "sem", Types: sem, Task: true, As: true,
			Args: []Arg{argObject, pos(sopsField{}),
				named("timeout", enum(func(o *Op) *SemTimeout { return &o.Sem.Timeout }, semTimeoutNames)).Optional(),
				argBadBuf,
			},
			Check: checkSemop,
		},
		KindSpec{Kind: KindSemctl, Name: "semctl", Doc: "semctl with a command (num= for the per-semaphore ones, val= for setval, vals= for setall, owner=, mode= and gid= for set)", Subsystem: "sem", Types: sem, Task: true, As: true,
			Reads: func(op Op) bool {
				switch op.Sem.Cmd {
				case SemIPCStat, SemIPCInfo, SemInfoCmd, SemStat, SemStatAny, SemGetVal, SemGetPid, SemGetNcnt, SemGetZcnt, SemGetAll:
					return true
				}
				return false
			},
			Args: []Arg{argObject,
				pos(enum(func(o *Op) *SemCmd { return &o.Sem.Cmd }, semCmdNames)),
				named("num", dec(func(o *Op) *int64 { return &o.Sem.Num }, -1<<31, 1<<31-1, 0)).When(semCmdIs(SemGetVal, SemGetPid, SemGetNcnt, SemGetZcnt, SemSetVal)),
				named("val", dec(func(o *Op) *int64 { return &o.Sem.Val }, -1<<31, 1<<31-1, 0)).When(semCmdIs(SemSetVal)),
				named("vals", valsField{}).When(semCmdIs(SemSetAll)),
				named("owner", dec(func(o *Op) *int64 { return &o.Value }, 0, 1<<32-1, 0)).When(semCmdIs(SemIPCSet)),
				argMode.When(semCmdIs(SemIPCSet)),
				argGroup.When(semCmdIs(SemIPCSet)),
				argBadBuf,
			},
			OpaqueIDs: func(op Op) bool {
				return op.Sem.Cmd == SemIPCInfo || op.Sem.Cmd == SemInfoCmd || op.Sem.Cmd == SemStat || op.Sem.Cmd == SemStatAny
			},
			Result: byOp(semctlResult),
		},
		KindSpec{Kind: KindSemLimits, Name: "sem_limits", Doc: "write /proc/sys/kernel/sem (semmsl semmns semopm semmni)", Subsystem: "sem", Types: sem, As: true,
			Args: []Arg{
				named("semmsl", dec(func(o *Op) *int64 { return &o.Sem.Limits[0] }, -1<<31, 1<<31-1, DefaultSemmsl)),
				named("semmns", dec(func(o *Op) *int64 { return &o.Sem.Limits[1] }, -1<<31, 1<<31-1, DefaultSemmns)),
				named("semopm", dec(func(o *Op) *int64 { return &o.Sem.Limits[2] }, -1<<31, 1<<31-1, DefaultSemopm)),
				named("semmni", dec(func(o *Op) *int64 { return &o.Sem.Limits[3] }, -1<<31, 1<<31-1, DefaultSemmni)),
			}},
	)
}

func formatSemState(s *Snapshot, b *strings.Builder) {
	l := s.SemLimits
	fmt.Fprintf(b, "semmsl=%d semmns=%d semopm=%d semmni=%d used_sems=%d arrays=%d\n", l.Semmsl, l.Semmns, l.Semopm, l.Semmni, l.UsedSems, len(s.Sems))
	for _, a := range s.Sems {
		fmt.Fprintf(b, "  id=%d vals=%v pids=%v ncnt=%v zcnt=%v sleepers=%v\n", a.ID, a.Vals, a.Pids, a.Ncnt, a.Zcnt, a.Sleepers)
	}
}
