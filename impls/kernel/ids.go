//go:build linux && amd64

package kernel

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ipcInfo is IPC_INFO of <linux/ipc.h>; x/sys/unix has the other IPC_*
// flags and commands, and struct ipc64_perm (SysvIpcPerm) and struct
// shmid64_ds (SysvShmDesc), but not this one, nor the msg and sem structs.
const ipcInfo = 3

// statBuf holds any of the three; the slack guards against a layout we got
// wrong overrunning into other memory.
type statBuf struct {
	ds    [16]uint64
	slack [16]uint64
}

// msqid64DS is struct msqid64_ds on x86-64 (120 bytes).
type msqid64DS struct {
	perm                unix.SysvIpcPerm
	stime, rtime, ctime int64
	cbytes, qnum        uint64
	qbytes              uint64
	lspid, lrpid        int32
	_                   [2]uint64
}

// semid64DS is struct semid64_ds on x86-64 (104 bytes).
type semid64DS struct {
	perm  unix.SysvIpcPerm
	otime int64
	_     uint64
	ctime int64
	_     uint64
	nsems uint64
	_     [2]uint64
}

func init() {
	// The layouts above are the kernel ABI; a wrong size would be a bug here.
	if unsafe.Sizeof(statBuf{}) != 256 || unsafe.Sizeof(unix.SysvIpcPerm{}) != 48 || unsafe.Sizeof(msqid64DS{}) != 120 ||
		unsafe.Sizeof(semid64DS{}) != 104 || unsafe.Sizeof(unix.SysvShmDesc{}) != 112 {
		panic("kernel: SysV IPC struct layouts do not match the x86-64 ABI")
	}
}

// getCall is the syscall of a get op: msgget(key, flags), semget(key,
// size, flags) or shmget(key, size, flags). Only the 0777 bits of mode are
// passed, so a mode can never smuggle in IPC_NOWAIT, SHM_HUGETLB or the
// like. key, size and the flags go to the kernel as they are, which
// truncates key and nsems to int.
func getCall(op ops.Op) (uintptr, [6]uintptr) {
	flags := uintptr(op.Mode & 0o777)
	if op.Creat {
		flags |= unix.IPC_CREAT
	}
	if op.Excl {
		flags |= unix.IPC_EXCL
	}
	key := uintptr(op.Key) // sign-extended; the kernel reads the low 32 bits as key_t
	switch op.Type {
	case ops.Msg:
		return unix.SYS_MSGGET, [6]uintptr{key, flags}
	case ops.Sem:
		return unix.SYS_SEMGET, [6]uintptr{key, uintptr(op.Size), flags}
	}
	if op.Huge {
		flags |= shmHugetlb
	}
	return unix.SYS_SHMGET, [6]uintptr{key, uintptr(op.Size), flags}
}

// ipcGet is the get op's syscall (getCall), issued by the calling thread.
func ipcGet(op ops.Op) (int64, unix.Errno) {
	nr, a := getCall(op)
	r, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return int64(r), e
}

// ctlCall is the syscall of msgctl, semctl (semnum 0) or shmctl of cmd on
// id; its buffer is argument bufArg. A negative id is passed through
// (sign-extended) for the kernel to refuse.
func ctlCall(t ops.IPCType, id int64, cmd int) (nr uintptr, args [6]uintptr, bufArg int) {
	switch t {
	case ops.Msg:
		return unix.SYS_MSGCTL, [6]uintptr{uintptr(id), uintptr(cmd)}, 2
	case ops.Sem:
		return unix.SYS_SEMCTL, [6]uintptr{uintptr(id), 0, uintptr(cmd)}, 3
	}
	return unix.SYS_SHMCTL, [6]uintptr{uintptr(id), uintptr(cmd)}, 2
}

// ipcCtl is msgctl, semctl (semnum 0) or shmctl of cmd on id, with buf as the
// argument. A negative id is passed through (sign-extended) for the kernel
// to refuse.
func ipcCtl(t ops.IPCType, id int64, cmd int, buf *statBuf) unix.Errno {
	var e unix.Errno
	switch t {
	case ops.Msg:
		_, _, e = unix.Syscall(unix.SYS_MSGCTL, uintptr(id), uintptr(cmd), uintptr(unsafe.Pointer(buf)))
	case ops.Sem:
		_, _, e = unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, uintptr(cmd), uintptr(unsafe.Pointer(buf)), 0, 0)
	case ops.Shm:
		_, _, e = unix.Syscall(unix.SYS_SHMCTL, uintptr(id), uintptr(cmd), uintptr(unsafe.Pointer(buf)))
	}
	return e
}

// ipcStatObject is IPC_STAT on id: key, the 0777 bits of the mode, the owner's
// uid and the size (shm segment size, sem nsems, 0 for msg). ID is left 0.
func ipcStatObject(t ops.IPCType, id int64) (ops.Object, unix.Errno) {
	var buf statBuf
	if e := ipcCtl(t, id, unix.IPC_STAT, &buf); e != 0 {
		return ops.Object{}, e
	}
	return statObjectOf(t, &buf), 0
}

// statObjectOf reads the object out of an IPC_STAT buffer.
func statObjectOf(t ops.IPCType, buf *statBuf) ops.Object {
	p := (*unix.SysvIpcPerm)(unsafe.Pointer(&buf.ds))
	o := ops.Object{Key: p.Key, Mode: uint16(p.Mode & 0o777), Owner: p.Uid}
	switch t {
	case ops.Sem:
		o.Size = int64((*semid64DS)(unsafe.Pointer(&buf.ds)).nsems)
	case ops.Shm:
		o.Size = int64((*unix.SysvShmDesc)(unsafe.Pointer(&buf.ds)).Segsz)
	}
	return o
}

// ipcLimits returns the object limit of t (msgmni, semmni or shmmni) and
// its max_idx from one IPC_INFO: the call returns ipc_get_maxidx (0 when no
// object is in use) and copies the very namespace fields the sysctls write
// (ns->msg_ctlmni, ns->sc_semmni, ns->shm_ctlmni) in a third of a
// microsecond; reading the sysctl files costs 13 µs each, and about 100 µs
// the first time a file is opened in a new namespace.
func ipcLimits(t ops.IPCType) (limit, maxIdx int64, e unix.Errno) {
	var buf statBuf
	nr, args, bufArg := ctlCall(t, 0, ipcInfo)
	args[bufArg] = uintptr(unsafe.Pointer(&buf))
	r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	if e != 0 {
		return 0, 0, e
	}
	b := unsafe.Pointer(&buf.ds)
	switch t {
	case ops.Msg: // struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni (int)
		limit = int64(*(*int32)(unsafe.Add(b, 16)))
	case ops.Sem: // struct seminfo: semmap, semmni (int)
		limit = int64(*(*int32)(unsafe.Add(b, 4)))
	default: // struct shminfo64: shmmax, shmmin, shmmni (unsigned long)
		limit = int64(*(*uint64)(unsafe.Add(b, 16)))
	}
	return limit, int64(r), 0
}

func init() {
	calls.Add(idCall((*ns).get), ops.KindGet)
	calls.Add(errnoCall(func(n *ns, op ops.Op) (unix.Errno, error) { return n.ctl(op, unix.IPC_RMID, nil) }), ops.KindRmid)
	calls.Add(func(n *ns, op ops.Op) (r ops.Result, e unix.Errno, err error) {
		r.Obj, e, err = n.statObject(op)
		return r, e, err
	}, ops.KindStat)
	// churn and fill are timed whole: their loops are their syscalls.
	calls.Add(idCall(func(n *ns, op ops.Op) (int64, unix.Errno, error) {
		defer n.clock().End(n.clock().Begin())
		return churn(op)
	}), ops.KindChurn)
	calls.Add(idCall(func(n *ns, op ops.Op) (int64, unix.Errno, error) {
		defer n.clock().End(n.clock().Begin())
		id, e := fill(op)
		return id, e, nil
	}), ops.KindFill)
	calls.Add(errnoCall(func(n *ns, op ops.Op) (unix.Errno, error) {
		n.nextIDWritten[op.Type] = true
		return n.proc.setNextID(op.Type, op.Value)
	}), ops.KindNextID)
	calls.Add(func(n *ns, op ops.Op) (r ops.Result, _ unix.Errno, err error) {
		r.ID, err = n.proc.readInt("/proc/sys/kernel/" + op.Type.String() + "_next_id")
		return r, 0, err
	}, ops.KindReadNextID)
	calls.Add(errnoCall(func(n *ns, op ops.Op) (unix.Errno, error) { return n.proc.setLimit(op.Type, op.Value) }), ops.KindLimit)
	calls.Add((*ns).list, ops.KindList)
}

// get is the get op's syscall, issued by op's task.
func (n *ns) get(op ops.Op) (int64, unix.Errno, error) {
	if op.Huge && op.Type == ops.Shm {
		if err := hugetlbSafe(); err != nil {
			return 0, 0, err
		}
	}
	nr, args := getCall(op)
	r, e, err := n.tasks.sys(callerOf(op), nr, args, nil, 0)
	return int64(r), e, err
}

// churn creates an IPC_PRIVATE object and removes it again, op.Value
// times, and returns the last id; an object it cannot create ends the loop
// with that errno.
func churn(op ops.Op) (int64, unix.Errno, error) {
	get := ops.Op{Kind: ops.KindGet, Type: op.Type, Mode: 0o600, Size: 1}
	var id int64
	for range op.Value {
		var e unix.Errno
		if id, e = ipcGet(get); e != 0 {
			return 0, e, nil
		}
		if e = ipcCtl(op.Type, id, unix.IPC_RMID, nil); e != 0 {
			return 0, 0, fmt.Errorf("kernel: churn: removing %s %d: %w", op.Type, id, e)
		}
	}
	return id, 0, nil
}

// fill creates op.Value IPC_PRIVATE objects (mode 0600, size 1) that stay
// and returns the last id; an object it cannot create ends it with that
// errno (the ones made stay).
func fill(op ops.Op) (int64, unix.Errno) {
	get := ops.Op{Kind: ops.KindGet, Type: op.Type, Mode: 0o600, Size: 1}
	var id int64
	for range op.Value {
		var e unix.Errno
		if id, e = ipcGet(get); e != 0 {
			return 0, e
		}
	}
	return id, 0
}

// ctl is ipcCtl of cmd on op's object, issued by op's task.
func (n *ns) ctl(op ops.Op, cmd int, buf *statBuf) (unix.Errno, error) {
	if op.Task == 0 {
		defer n.clock().End(n.clock().Begin())
		return ipcCtl(op.Type, op.Obj.ID, cmd, buf), nil
	}
	var b []byte
	if buf != nil {
		b = buf.bytes()
	}
	nr, args, bufArg := ctlCall(op.Type, op.Obj.ID, cmd)
	_, e, err := n.tasks.sys(callerOf(op), nr, args, b, bufArg)
	return e, err
}

// statObject is ipcStatObject issued by op's task.
func (n *ns) statObject(op ops.Op) (ops.Object, unix.Errno, error) {
	if op.Task == 0 {
		start := n.clock().Begin()
		o, e := ipcStatObject(op.Type, op.Obj.ID)
		n.clock().End(start)
		return o, e, nil
	}
	var buf statBuf
	if e, err := n.ctl(op, unix.IPC_STAT, &buf); e != 0 || err != nil {
		return ops.Object{}, e, err
	}
	return statObjectOf(op.Type, &buf), 0, nil
}

// listing reads and parses /proc/sysvipc/<typ> of the worker's namespace.
// The errno is that of the open or a read (a caller run as another user
// may be refused).
func (n *ns) listing(typ ops.IPCType) ([]ops.Row, unix.Errno, error) {
	return n.reader(allTasks).listing(typ)
}

// listing reads and parses /proc/sysvipc/<typ> of the namespace of the
// reader's thread.
func (r reader) listing(typ ops.IPCType) ([]ops.Row, unix.Errno, error) {
	b, e, err := r.proc.read("/proc/sysvipc/" + typ.String())
	if err != nil || e != 0 {
		return nil, e, err
	}
	rows, err := parseSysvipc(typ, b, r.tasks.pid)
	return rows, 0, err
}

// bytes is the memory of a stat buffer as bytes.
func (b *statBuf) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(b)), unsafe.Sizeof(*b))
}
