//go:build linux && amd64

package kernel

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The sem subsystem (ipc/sem.c) on the real kernel. A semop by t0 runs on
// the worker thread and never sleeps (every sop has IPC_NOWAIT, or it has
// a timeout). By a task t1..t15 it is started in the task process and
// settled like a msgsnd (msg.go): it returned, or the task sleeps in it
// (state S inside semop or semtimedop), and the result is Blocked. The waker
// of a semaphore sleeper does the sleeper's whole operation under the
// array's lock before it returns, so after every operation the settling
// sees each completed sleeper return. semctl runs every command for real,
// as the op's task; SETVAL and SETALL by a task set the task's pid.

// Flags of a sop and commands of semctl (<linux/sem.h>); x/sys/unix has
// none of them.
const (
	semUndo    = 0x1000
	semGetPid  = 11
	semGetVal  = 12
	semGetAll  = 13
	semGetNcnt = 14
	semGetZcnt = 15
	semSetVal  = 16
	semSetAll  = 17
	semStatCmd = 18
	semInfoCmd = 19
	semStatAny = 20
)

var semCmds = map[ops.SemCmd]int{
	ops.SemIPCStat: unix.IPC_STAT, ops.SemIPCSet: unix.IPC_SET, ops.SemIPCInfo: ipcInfo, ops.SemInfoCmd: semInfoCmd,
	ops.SemStat: semStatCmd, ops.SemStatAny: semStatAny, ops.SemGetVal: semGetVal, ops.SemGetPid: semGetPid,
	ops.SemGetNcnt: semGetNcnt, ops.SemGetZcnt: semGetZcnt, ops.SemGetAll: semGetAll,
	ops.SemSetVal: semSetVal, ops.SemSetAll: semSetAll, ops.SemInvalid: -1,
}

// sembufSize is the size of a struct sembuf: sem_num, sem_op, sem_flg.
const sembufSize = 6

func init() {
	calls.Add((*ns).semop, ops.KindSemop)
	calls.Add((*ns).semctl, ops.KindSemctl)
	calls.Add(errnoCall(func(n *ns, op ops.Op) (unix.Errno, error) {
		l := op.Sem.Limits
		return n.proc.write("/proc/sys/kernel/sem", fmt.Sprintf("%d %d %d %d\n", l[0], l[1], l[2], l[3]))
	}), ops.KindSemLimits)
}

// semTimespec is the timeout of a semtimedop (nil for a plain semop).
func semTimespec(t ops.SemTimeout) *unix.Timespec {
	switch t {
	case ops.SemZeroTimeout:
		return &unix.Timespec{}
	case ops.SemBadNsec:
		return &unix.Timespec{Nsec: 1e9}
	case ops.SemNegSecond:
		return &unix.Timespec{Sec: -1}
	}
	return nil
}

// semop is semop(id, sops, nsops), or semtimedop with the op's timeout.
// The payload holds the sembufs, then the timespec.
func (n *ns) semop(op ops.Op) (ops.Result, unix.Errno, error) {
	sops := op.Sem.SopList()
	tsAt := (len(sops)*sembufSize + 7) &^ 7
	buf := make([]byte, tsAt+int(unsafe.Sizeof(unix.Timespec{})))
	nowait := true
	for i, s := range sops {
		var flg uint16
		if s.Flags&ops.SemNowait != 0 {
			flg |= unix.IPC_NOWAIT
		} else {
			nowait = false
		}
		if s.Flags&ops.SemUndo != 0 {
			flg |= semUndo
		}
		b := buf[i*sembufSize:]
		binary.NativeEndian.PutUint16(b, s.Num)
		binary.NativeEndian.PutUint16(b[2:], uint16(s.Op))
		binary.NativeEndian.PutUint16(b[4:], flg)
	}
	q := blockingReq{
		caller: callerOf(op), kind: op.Kind, id: int64(int32(op.Obj.ID)), nr: unix.SYS_SEMOP,
		args: [6]uintptr{uintptr(op.Obj.ID), 0, uintptr(len(sops))}, buf: buf, ptrs: 1 << 1, nowait: nowait,
	}
	if ts := semTimespec(op.Sem.Timeout); ts != nil {
		q.nr, q.timed = unix.SYS_SEMTIMEDOP, true
		*(*unix.Timespec)(unsafe.Pointer(&buf[tsAt])) = *ts
		q.args[3], q.ptrs = uintptr(tsAt), q.ptrs|1<<3
	}
	if op.Sem.Timeout == ops.SemBadPtr {
		q.nr, q.timed = unix.SYS_SEMTIMEDOP, true
		q.badArg(3)
	}
	if op.BadBuf {
		q.badArg(1)
	}
	_, e, blocked, err := n.tasks.blockingCall(q)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	return ops.Result{Blocked: blocked}, 0, nil
}

// semNsems returns the number of semaphores of array id, or 0 if id names
// none. SEM_STAT_ANY reads it with no permission check, whoever the caller.
func (n *ns) semNsems(t uint8, id int64) (int, error) {
	var buf statBuf
	r, e, err := n.peek(t, unix.SYS_SEMCTL, [6]uintptr{uintptr(ops.IDIdx(id)), 0, semStatAny}, buf.bytes(), 3)
	if err != nil || e != 0 || int64(int32(r)) != int64(int32(id)) {
		return 0, err
	}
	return int((*semid64DS)(unsafe.Pointer(&buf.ds)).nsems), nil
}

// semctl runs one semctl command as op's task and caller.
func (n *ns) semctl(op ops.Op) (ops.Result, unix.Errno, error) {
	cmd, ok := semCmds[op.Sem.Cmd]
	if !ok {
		return ops.Result{}, 0, fmt.Errorf("unknown semctl command %d", op.Sem.Cmd)
	}
	args := [6]uintptr{uintptr(op.Obj.ID), uintptr(op.Sem.Num), uintptr(cmd)}
	switch op.Sem.Cmd {
	case ops.SemGetVal, ops.SemGetNcnt, ops.SemGetZcnt, ops.SemGetPid, ops.SemSetVal:
		if op.Sem.Cmd == ops.SemSetVal {
			args[3] = uintptr(op.Sem.Val) // the kernel reads an int
		}
		r, e, err := n.tasks.sys(callerOf(op), unix.SYS_SEMCTL, args, nil, 0)
		if err != nil || e != 0 || op.Sem.Cmd == ops.SemSetVal {
			return ops.Result{}, e, err
		}
		if op.Sem.Cmd == ops.SemGetPid {
			return ops.Result{Sem: ops.SemResult{Pid: n.tasks.pid(int64(r))}}, 0, nil
		}
		return ops.Result{ID: int64(r)}, 0, nil
	case ops.SemGetAll, ops.SemSetAll:
		return n.semAll(op, args)
	}
	var buf statBuf
	ds := (*semid64DS)(unsafe.Pointer(&buf.ds))
	if op.Sem.Cmd == ops.SemIPCSet {
		ds.perm.Uid, ds.perm.Gid, ds.perm.Mode = uint32(op.Value), op.GroupOr(uint32(op.Value)), uint32(op.Mode&0o777)
	}
	b, args := withBadBuf(op, buf.bytes(), args, 3)
	r, e, err := n.tasks.sys(callerOf(op), unix.SYS_SEMCTL, args, b, 3)
	if err != nil || e != 0 {
		return ops.Result{}, e, err
	}
	var res ops.Result
	switch op.Sem.Cmd {
	case ops.SemIPCStat, ops.SemStat, ops.SemStatAny:
		res.Row = semRow(ds)
		if op.Sem.Cmd != ops.SemIPCStat {
			res.ID, res.Row.ID = int64(r), int64(r)
		}
	case ops.SemIPCInfo, ops.SemInfoCmd:
		res.ID = int64(r)
		res.Sem.Info = seminfoOf(&buf)
	}
	return res, 0, nil
}

// semAll is GETALL or SETALL: the payload is one unsigned short per
// semaphore of the array (SETALL: the script's values, then zeros).
func (n *ns) semAll(op ops.Op, args [6]uintptr) (ops.Result, unix.Errno, error) {
	nsems, err := n.semNsems(op.Task, op.Obj.ID)
	if err != nil {
		return ops.Result{}, 0, err
	}
	buf := make([]byte, 2*max(nsems, 1))
	if op.Sem.Cmd == ops.SemSetAll {
		for i, v := range op.Sem.ValList() {
			if i < nsems {
				binary.NativeEndian.PutUint16(buf[2*i:], uint16(v))
			}
		}
	}
	b, args := withBadBuf(op, buf, args, 3)
	_, e, err := n.tasks.sys(callerOf(op), unix.SYS_SEMCTL, args, b, 3)
	if err != nil || e != 0 || op.Sem.Cmd == ops.SemSetAll {
		return ops.Result{}, e, err
	}
	vals := make([]int64, nsems)
	for i := range vals {
		vals[i] = int64(binary.NativeEndian.Uint16(buf[2*i:]))
	}
	return ops.Result{Sem: ops.SemResult{Vals: vals}}, 0, nil
}

// semRow reads a sem row out of an IPC_STAT or SEM_STAT buffer; sem_otime
// is the latest otime of any semaphore of the array.
func semRow(ds *semid64DS) ops.Row {
	return ops.Row{
		Key: ds.perm.Key, Mode: uint16(ds.perm.Mode), Size: int64(ds.nsems),
		UID: ds.perm.Uid, GID: ds.perm.Gid, CUID: ds.perm.Cuid, CGID: ds.perm.Cgid,
		Atime: ds.otime != 0, Ctime: ds.ctime != 0,
	}
}

// seminfoOf reads a struct seminfo: semmap, semmni, semmns, semmnu, semmsl,
// semopm, semume, semusz, semvmx, semaem (ints).
func seminfoOf(buf *statBuf) ops.SemInfo {
	v := (*[10]int32)(unsafe.Pointer(&buf.ds))
	return ops.SemInfo{
		Semmap: int64(v[0]), Semmni: int64(v[1]), Semmns: int64(v[2]), Semmnu: int64(v[3]), Semmsl: int64(v[4]),
		Semopm: int64(v[5]), Semume: int64(v[6]), Semusz: int64(v[7]), Semvmx: int64(v[8]), Semaem: int64(v[9]),
	}
}

// semArrays reads every array of rows (the sem rows of a listing, in idx
// order) on the worker thread: the values (GETALL), and per semaphore the
// pid of the last operation, GETNCNT and GETZCNT; and which tasks sleep in
// a semop on it.
func (r reader) semArrays(rows []ops.Row) ([]ops.SemState, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]ops.SemState, 0, len(rows))
	for _, row := range rows {
		st, err := r.semArray(row.ID, int(row.Size))
		if err != nil {
			return nil, err
		}
		for t, call := range r.tasks.pending {
			if call != nil && call.kind == ops.KindSemop && call.id == row.ID && r.holds(t) {
				st.Sleepers = append(st.Sleepers, uint8(t))
			}
		}
		slices.Sort(st.Sleepers)
		out = append(out, st)
	}
	return out, nil
}

// semArray reads array id of nsems semaphores.
func (r reader) semArray(id int64, nsems int) (ops.SemState, error) {
	st := ops.SemState{ID: id, Vals: make([]int64, nsems), Pids: make([]ops.PID, nsems), Ncnt: make([]int64, nsems), Zcnt: make([]int64, nsems)}
	semctl := func(num, cmd int, arg uintptr) (int64, error) {
		r, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), uintptr(num), uintptr(cmd), arg, 0, 0)
		if e != 0 {
			return 0, fmt.Errorf("semctl(%d, %d, %d): %w", id, num, cmd, e)
		}
		return int64(r), nil
	}
	vals := make([]uint16, max(nsems, 1))
	if _, err := semctl(0, semGetAll, uintptr(unsafe.Pointer(&vals[0]))); err != nil {
		return st, err
	}
	for i := range nsems {
		st.Vals[i] = int64(vals[i])
		pid, err := semctl(i, semGetPid, 0)
		if err != nil {
			return st, err
		}
		st.Pids[i] = r.tasks.pid(pid)
		if st.Ncnt[i], err = semctl(i, semGetNcnt, 0); err != nil {
			return st, err
		}
		if st.Zcnt[i], err = semctl(i, semGetZcnt, 0); err != nil {
			return st, err
		}
	}
	return st, nil
}

// semLimitsNow reads kernel.sem and the semaphores in use. IPC_INFO copies
// the very namespace fields /proc/sys/kernel/sem shows (sc_semmsl,
// sc_semmns, sc_semopm, sc_semmni) at a fraction of the cost of the file
// (TestSemLimitsAreTheSysctl checks both), and SEM_INFO's semaem is
// used_sems.
func semLimitsNow() (ops.SemLimits, error) {
	var buf statBuf
	if _, _, e := unix.Syscall6(unix.SYS_SEMCTL, 0, 0, ipcInfo, uintptr(unsafe.Pointer(&buf)), 0, 0); e != 0 {
		return ops.SemLimits{}, fmt.Errorf("sem IPC_INFO: %w", e)
	}
	in := seminfoOf(&buf)
	l := ops.SemLimits{Semmsl: in.Semmsl, Semmns: in.Semmns, Semopm: in.Semopm, Semmni: in.Semmni}
	if _, _, e := unix.Syscall6(unix.SYS_SEMCTL, 0, 0, semInfoCmd, uintptr(unsafe.Pointer(&buf)), 0, 0); e != 0 {
		return ops.SemLimits{}, fmt.Errorf("SEM_INFO: %w", e)
	}
	l.UsedSems = seminfoOf(&buf).Semaem
	return l, nil
}
