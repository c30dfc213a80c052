package ipcns

import (
	"math"
	"sort"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// Semaphores. The semantics of one array (the atomic semop, the pending
// queues, the wake-ups, undo and exit) are impls/semq's; this file is what
// ipc/sem.c does around them: the checks before the lock, in their order
// (ipc-spec §3.3 and §3.7), the namespace's kernel.sem limits, the undo
// entries of each process, and tasks asleep.

// semLimits are the namespace's kernel.sem values but semmni (the ids'
// limit of the sem type).
type semLimits struct{ msl, mns, opm int64 }

func defaultSemLimits() semLimits {
	return semLimits{msl: ops.DefaultSemmsl, mns: ops.DefaultSemmns, opm: ops.DefaultSemopm}
}

// SetSemOptions sets how arrays keep their pending operations and count
// their waiters (the naive and optimized models differ there); it takes
// effect for arrays created from then on.
func (ns *Namespace) SetSemOptions(o semq.Options) { ns.semOpts = o }

// newArray is the array semget just created.
func (ns *Namespace) newArray(o *Obj) {
	o.Sem = semq.NewArray(int(o.Size), ns.semOpts)
	o.Sem.SetCtime()
}

func (ns *Namespace) lookupSem(id int64) *Obj { return ns.cur.types[ops.Sem].lookup(id) }

func init() {
	handlers.Add(result((*Namespace).semop), ops.KindSemop)
	handlers.Add(result((*Namespace).semctl), ops.KindSemctl)
	handlers.Add(errno((*Namespace).setSemLimits), ops.KindSemLimits)
}

// semop is do_semtimedop with the checks in the order of ipc-spec §3.3.
func (ns *Namespace) semop(op ops.Op) ops.Result {
	sops := op.Sem.SopList()
	switch {
	case op.Sem.Timeout == ops.SemBadPtr:
		return ops.Result{Err: ops.EFAULT} // the timeout is read first, even with nsops 0
	case int64(len(sops)) > ns.cur.semLimits.opm:
		return ops.Result{Err: ops.E2BIG}
	case len(sops) < 1:
		return ops.Result{Err: ops.EINVAL}
	case op.BadBuf:
		return ops.Result{Err: ops.EFAULT} // the sops are copied in before the id is checked
	case int32(op.Obj.ID) < 0:
		return ops.Result{Err: ops.EINVAL}
	case op.Sem.Timeout == ops.SemBadNsec || op.Sem.Timeout == ops.SemNegSecond:
		return ops.Result{Err: ops.EINVAL}
	}
	pid := ns.taskPID(op.Task)
	o := ns.lookupSem(op.Obj.ID)
	if o != nil && anyUndo(sops) {
		o.Sem.EnsureUndo(pid) // made before the checks that follow, even if the call then fails
	}
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	ss := make([]semq.Sop, len(sops))
	alter, maxNum := false, 0
	for i, s := range sops {
		ss[i] = semq.Sop{Num: int(s.Num), Op: int(s.Op), NoWait: s.Flags&ops.SemNowait != 0, Undo: s.Flags&ops.SemUndo != 0}
		alter = alter || s.Op != 0
		maxNum = max(maxNum, int(s.Num))
	}
	if maxNum >= o.Sem.Nsems() {
		return ops.Result{Err: ops.EFBIG}
	}
	acc := uint16(0o444)
	if alter {
		acc = 0o222
	}
	if !permitted(o, op.As, acc) {
		return ops.Result{Err: ops.EACCES}
	}
	err, blocked, done := o.Sem.Semop(pid, int(op.Task), ss)
	r := ops.Result{Err: err, Done: ns.semDone(done)}
	if blocked {
		if op.Sem.Timeout == ops.SemZeroTimeout {
			o.Sem.Timeout(int(op.Task)) // it sleeps no time at all: EAGAIN
			r.Err = ops.EAGAIN
			return r
		}
		r.Blocked = true
		ns.asleep[op.Task] = o
	}
	return r
}

func anyUndo(sops []ops.Sop) bool {
	for _, s := range sops {
		if s.Flags&ops.SemUndo != 0 {
			return true
		}
	}
	return false
}

// semDone turns an array's completions into the result's, waking their
// tasks.
func (ns *Namespace) semDone(done []semq.Completion) []ops.Completion {
	var out []ops.Completion
	for _, c := range done {
		ns.asleep[c.Task] = nil
		out = append(out, ops.Completion{Task: uint8(c.Task), Err: c.Err})
	}
	return out
}

// semctl is ksys_semctl with the checks in the order of ipc-spec §3.7.
func (ns *Namespace) semctl(op ops.Op) ops.Result {
	if int32(op.Obj.ID) < 0 {
		return ops.Result{Err: ops.EINVAL}
	}
	if !op.BadBuf {
		return ns.semctlCall(op)
	}
	switch op.Sem.Cmd {
	case ops.SemIPCSet:
		return ops.Result{Err: ops.EFAULT} // IPC_SET copies its struct in before the lookup
	case ops.SemIPCStat, ops.SemStat, ops.SemStatAny, ops.SemIPCInfo, ops.SemInfoCmd, ops.SemGetAll:
		// These only read: the copy-out after every check fails.
		if r := ns.semctlCall(op); r.Err != ops.OK {
			return r
		}
		return ops.Result{Err: ops.EFAULT}
	}
	return ns.semctlCall(op) // SETALL fails in semSet; the others take no buffer
}

// semctlCall is semctl after the id check; a bad buffer only matters to
// SETALL here.
func (ns *Namespace) semctlCall(op ops.Op) ops.Result {
	s := ns.cur.types[ops.Sem]
	id := int64(int32(op.Obj.ID))
	switch op.Sem.Cmd {
	case ops.SemInvalid:
		return ops.Result{Err: ops.EINVAL} // no such command: nothing is looked up
	case ops.SemIPCInfo, ops.SemInfoCmd:
		return ns.semInfo(op.Sem.Cmd)
	case ops.SemStat, ops.SemStatAny:
		o := s.table.Get(ops.IDIdx(id))
		if o == nil {
			return ops.Result{Err: ops.EINVAL}
		}
		if op.Sem.Cmd == ops.SemStat && !permitted(o, op.As, 0o444) {
			return ops.Result{Err: ops.EACCES}
		}
		return ops.Result{ID: o.ID(), Row: rowOf(ops.Sem, o)}
	case ops.SemSetVal:
		if op.Sem.Val < 0 || op.Sem.Val > ops.SemVMX {
			return ops.Result{Err: ops.ERANGE} // before the id is looked up
		}
	}
	o := s.lookup(id)
	if o == nil {
		return ops.Result{Err: ops.EINVAL}
	}
	switch op.Sem.Cmd {
	case ops.SemIPCSet:
		if !ownerOrCreator(o, op.As) {
			return ops.Result{Err: ops.EPERM}
		}
		group := op.GroupOr(uint32(op.Value))
		if uint32(op.Value) == math.MaxUint32 || group == math.MaxUint32 { // (uid_t)-1 maps to no user
			return ops.Result{Err: ops.EINVAL}
		}
		o.UID, o.GID, o.Mode = uint32(op.Value), group, op.Mode&0o777
		o.Sem.SetCtime()
		return ops.Result{}
	case ops.SemSetVal, ops.SemSetAll:
		return ns.semSet(op, o)
	}
	if !permitted(o, op.As, 0o444) {
		return ops.Result{Err: ops.EACCES}
	}
	return semGet(op, o)
}

// semGet answers the reading commands: IPC_STAT, GET*.
func semGet(op ops.Op, o *Obj) ops.Result {
	a := o.Sem
	n := int(op.Sem.Num)
	switch op.Sem.Cmd {
	case ops.SemIPCStat:
		r := rowOf(ops.Sem, o)
		r.ID = 0
		return ops.Result{Row: r}
	case ops.SemGetAll:
		return ops.Result{Sem: ops.SemResult{Vals: int64s(a.GetAll())}}
	}
	if op.Sem.Num < 0 || op.Sem.Num >= int64(a.Nsems()) {
		return ops.Result{Err: ops.EINVAL}
	}
	switch op.Sem.Cmd {
	case ops.SemGetVal:
		return ops.Result{ID: int64(a.GetVal(n))}
	case ops.SemGetPid:
		return ops.Result{Sem: ops.SemResult{Pid: a.GetPid(n)}}
	case ops.SemGetNcnt:
		return ops.Result{ID: int64(a.GetNcnt(n))}
	case ops.SemGetZcnt:
		return ops.Result{ID: int64(a.GetZcnt(n))}
	}
	return ops.Result{Err: ops.EINVAL}
}

// semSet is SETVAL and SETALL: the array takes the values, wipes every
// adjustment of them and completes the sleepers that can now run.
func (ns *Namespace) semSet(op ops.Op, o *Obj) ops.Result {
	a := o.Sem
	pid := ns.taskPID(op.Task)
	if op.Sem.Cmd == ops.SemSetVal {
		if op.Sem.Num < 0 || op.Sem.Num >= int64(a.Nsems()) {
			return ops.Result{Err: ops.EINVAL}
		}
		if !permitted(o, op.As, 0o222) {
			return ops.Result{Err: ops.EACCES}
		}
		return ops.Result{Done: ns.semDone(a.SetVal(pid, int(op.Sem.Num), int(op.Sem.Val)))}
	}
	if !permitted(o, op.As, 0o222) {
		return ops.Result{Err: ops.EACCES}
	}
	if op.BadBuf {
		return ops.Result{Err: ops.EFAULT} // the values are copied in before they are checked
	}
	vals := make([]int, a.Nsems()) // the script's values, then zeros
	for i, v := range op.Sem.ValList() {
		if i < len(vals) {
			vals[i] = int(v)
		}
	}
	for _, v := range vals {
		if v > ops.SemVMX {
			return ops.Result{Err: ops.ERANGE}
		}
	}
	return ops.Result{Done: ns.semDone(a.SetAll(pid, vals))}
}

// semInfo is IPC_INFO and SEM_INFO: struct seminfo and the highest idx.
func (ns *Namespace) semInfo(cmd ops.SemCmd) ops.Result {
	s := ns.cur.types[ops.Sem]
	l := ns.cur.semLimits
	in := ops.SemInfo{Semmni: s.limit, Semmns: l.mns, Semmsl: l.msl, Semopm: l.opm,
		Semvmx: ops.SemVMX, Semmnu: ops.DefaultSemmns, Semmap: ops.DefaultSemmns, Semume: ops.DefaultSemopm,
		Semusz: 20, Semaem: 32767}
	if cmd == ops.SemInfoCmd {
		in.Semusz, in.Semaem = int64(s.table.Len()), ns.cur.usedSems
	}
	return ops.Result{ID: s.maxIdx(), Sem: ops.SemResult{Info: in}}
}

// setSemLimits writes kernel.sem; a semmni outside 0..32768 gives ERANGE and
// keeps every old value.
func (ns *Namespace) setSemLimits(op ops.Op) ops.Errno {
	if op.As != 0 {
		return ops.EACCES // the sysctl file is root's
	}
	// proc_ipc_sem_dointvec stores all four values, then puts only semmni
	// back when it is out of range: semmsl, semmns and semopm stay written.
	l := op.Sem.Limits
	ns.cur.semLimits = semLimits{msl: l[0], mns: l[1], opm: l[2]}
	if l[3] < 0 || l[3] > ops.IPCMNI {
		return ops.ERANGE
	}
	ns.cur.types[ops.Sem].limit = l[3]
	return ops.OK
}

// semRmid is IPC_RMID of an array: every sleeper returns EIDRM.
func (ns *Namespace) semRmid(o *Obj) []ops.Completion {
	ns.cur.usedSems -= o.Size
	return ns.semDone(o.Sem.Rmid())
}

// semExit is exit_sem for a task's process: its adjustments are applied to
// every array it has an undo entry for.
func (ns *Namespace) semExit(task uint8) []ops.Completion {
	pid := ns.taskPID(task)
	var done []ops.Completion
	for _, o := range ns.cur.types[ops.Sem].table.Listing() {
		if o.Sem.HasUndo(pid) {
			done = append(done, ns.semDone(o.Sem.Exit(pid))...)
		}
	}
	ops.SortCompletions(done)
	return done
}

// interrupt is a signal to a task: if it sleeps in semop, msgsnd or msgrcv,
// it returns EINTR.
func (ns *Namespace) interrupt(task uint8) ops.Result {
	o := ns.asleep[task]
	if o == nil {
		return ops.Result{}
	}
	ns.asleep[task] = nil
	if o.Sem != nil {
		o.Sem.Interrupt(int(task))
	} else {
		ns.msgInterrupt(o, int(task))
	}
	return ops.Result{Done: []ops.Completion{{Task: task, Err: ops.EINTR}}}
}

// semStates lists every array as the snapshot shows it.
func (ns *Namespace) semStates() []ops.SemState {
	var out []ops.SemState
	for _, o := range ns.cur.types[ops.Sem].table.Listing() {
		a := o.Sem
		st := ops.SemState{ID: o.ID()}
		for n := range a.Nsems() {
			st.Vals = append(st.Vals, int64(a.GetVal(n)))
			st.Pids = append(st.Pids, a.GetPid(n))
			st.Ncnt = append(st.Ncnt, int64(a.GetNcnt(n)))
			st.Zcnt = append(st.Zcnt, int64(a.GetZcnt(n)))
		}
		for _, t := range a.PendingTasks() {
			st.Sleepers = append(st.Sleepers, uint8(t))
		}
		sort.Slice(st.Sleepers, func(i, j int) bool { return st.Sleepers[i] < st.Sleepers[j] })
		out = append(out, st)
	}
	return out
}

func (ns *Namespace) semLimitsState() ops.SemLimits {
	l := ns.cur.semLimits
	return ops.SemLimits{Semmsl: l.msl, Semmns: l.mns, Semopm: l.opm, Semmni: ns.cur.types[ops.Sem].limit, UsedSems: ns.cur.usedSems}
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
