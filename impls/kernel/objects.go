//go:build linux && amd64

package kernel

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Flags and commands of <linux/ipc.h>.
const (
	ipcCreat = 0o1000
	ipcExcl  = 0o2000
	ipcRmid  = 0
	ipcStat  = 2
	ipcInfo  = 3
)

// ipc64Perm is struct ipc64_perm on x86-64 (48 bytes).
type ipc64Perm struct {
	key                  int32
	uid, gid, cuid, cgid uint32
	mode                 uint32
	seq                  uint16
	_                    uint16
	_                    [2]uint64
}

// statBuf holds any of the three; the slack guards against a layout we got
// wrong overrunning into other memory.
type statBuf struct {
	ds    [16]uint64
	slack [16]uint64
}

func init() {
	// The layouts above are the kernel ABI; a wrong size would be a bug here.
	if unsafe.Sizeof(ipc64Perm{}) != 48 || unsafe.Sizeof(msqid64DS{}) != 120 ||
		unsafe.Sizeof(semid64DS{}) != 104 || unsafe.Sizeof(shmid64DS{}) != 112 {
		panic("kernel: SysV IPC struct layouts do not match the x86-64 ABI")
	}
}

// ipcGet is msgget(key, flags), semget(key, size, flags) or
// shmget(key, size, flags). Only the 0777 bits of mode are passed, so a mode
// can never smuggle in IPC_NOWAIT, SHM_HUGETLB or the like. key, size and the
// flags go to the kernel as they are, which truncates key and nsems to int.
func ipcGet(op ops.Op) (int64, syscall.Errno) {
	flags := uintptr(op.Mode & 0o777)
	if op.Creat {
		flags |= ipcCreat
	}
	if op.Excl {
		flags |= ipcExcl
	}
	key := uintptr(op.Key) // sign-extended; the kernel reads the low 32 bits as key_t
	var r uintptr
	var e syscall.Errno
	switch op.Type {
	case ops.Msg:
		r, _, e = syscall.Syscall(syscall.SYS_MSGGET, key, flags, 0)
	case ops.Sem:
		r, _, e = syscall.Syscall(syscall.SYS_SEMGET, key, uintptr(op.Size), flags)
	case ops.Shm:
		r, _, e = syscall.Syscall(syscall.SYS_SHMGET, key, uintptr(op.Size), flags)
	}
	return int64(r), e
}

// ipcCtl is msgctl, semctl (semnum 0) or shmctl of cmd on id, with buf as the
// argument. A negative id is passed through (sign-extended) for the kernel
// to refuse.
func ipcCtl(t ops.IPCType, id int64, cmd int, buf *statBuf) syscall.Errno {
	var e syscall.Errno
	switch t {
	case ops.Msg:
		_, _, e = syscall.Syscall(syscall.SYS_MSGCTL, uintptr(id), uintptr(cmd), uintptr(unsafe.Pointer(buf)))
	case ops.Sem:
		_, _, e = syscall.Syscall6(syscall.SYS_SEMCTL, uintptr(id), 0, uintptr(cmd), uintptr(unsafe.Pointer(buf)), 0, 0)
	case ops.Shm:
		_, _, e = syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), uintptr(cmd), uintptr(unsafe.Pointer(buf)))
	}
	return e
}

// ipcStatObject is IPC_STAT on id: key, the 0777 bits of the mode, the owner's
// uid and the size (shm segment size, sem nsems, 0 for msg). ID is left 0.
func ipcStatObject(t ops.IPCType, id int64) (ops.Object, syscall.Errno) {
	var buf statBuf
	if e := ipcCtl(t, id, ipcStat, &buf); e != 0 {
		return ops.Object{}, e
	}
	return statObjectOf(t, &buf), 0
}

// statObjectOf reads the object out of an IPC_STAT buffer.
func statObjectOf(t ops.IPCType, buf *statBuf) ops.Object {
	p := (*ipc64Perm)(unsafe.Pointer(&buf.ds))
	o := ops.Object{Key: p.key, Mode: uint16(p.mode & 0o777), Owner: p.uid}
	switch t {
	case ops.Sem:
		o.Size = int64((*semid64DS)(unsafe.Pointer(&buf.ds)).nsems)
	case ops.Shm:
		o.Size = int64((*shmid64DS)(unsafe.Pointer(&buf.ds)).segsz)
	}
	return o
}

// ipcLimit returns the object limit of t (msgmni, semmni or shmmni) from
// IPC_INFO, which copies the very namespace fields the sysctls write
// (ns->msg_ctlmni, ns->sc_semmni, ns->shm_ctlmni) in a third of a
// microsecond; reading the sysctl files costs 13 µs each, and about 100 µs
// the first time a file is opened in a new namespace.
func ipcLimit(t ops.IPCType) (int64, syscall.Errno) {
	var buf statBuf
	if e := ipcCtl(t, 0, ipcInfo, &buf); e != 0 {
		return 0, e
	}
	b := unsafe.Pointer(&buf.ds)
	switch t {
	case ops.Msg: // struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni (int)
		return int64(*(*int32)(unsafe.Add(b, 16))), 0
	case ops.Sem: // struct seminfo: semmap, semmni (int)
		return int64(*(*int32)(unsafe.Add(b, 4))), 0
	}
	// struct shminfo64: shmmax, shmmin, shmmni (unsigned long)
	return int64(*(*uint64)(unsafe.Add(b, 16))), 0
}

// get is ipcGet issued by op's task.
func (t *thread) get(op ops.Op) (int64, syscall.Errno, error) {
	if op.Task == 0 {
		id, e := ipcGet(op)
		return id, e, nil
	}
	flags := uintptr(op.Mode & 0o777)
	if op.Creat {
		flags |= ipcCreat
	}
	if op.Excl {
		flags |= ipcExcl
	}
	key := uintptr(op.Key)
	var r uintptr
	var e syscall.Errno
	var err error
	switch op.Type {
	case ops.Msg:
		r, e, err = t.sys(op, syscall.SYS_MSGGET, [6]uintptr{key, flags}, nil, 0)
	case ops.Sem:
		r, e, err = t.sys(op, syscall.SYS_SEMGET, [6]uintptr{key, uintptr(op.Size), flags}, nil, 0)
	default:
		r, e, err = t.sys(op, syscall.SYS_SHMGET, [6]uintptr{key, uintptr(op.Size), flags}, nil, 0)
	}
	return int64(r), e, err
}

// churn creates an IPC_PRIVATE object and removes it again, op.Value
// times, and returns the last id; an object it cannot create ends the loop
// with that errno.
func (t *thread) churn(op ops.Op) (int64, syscall.Errno, error) {
	get := ops.Op{Kind: ops.KindGet, Type: op.Type, Mode: 0o600, Size: 1}
	var id int64
	for range op.Value {
		var e syscall.Errno
		if id, e = ipcGet(get); e != 0 {
			return 0, e, nil
		}
		if e = ipcCtl(op.Type, id, ipcRmid, nil); e != 0 {
			return 0, 0, fmt.Errorf("kernel: churn: removing %s %d: %w", op.Type, id, e)
		}
	}
	return id, 0, nil
}

// ctl is ipcCtl of cmd on op's object, issued by op's task.
func (t *thread) ctl(op ops.Op, cmd int, buf *statBuf) (syscall.Errno, error) {
	if op.Task == 0 {
		return ipcCtl(op.Type, op.Obj.ID, cmd, buf), nil
	}
	id := uintptr(op.Obj.ID)
	var b []byte
	if buf != nil {
		b = buf.bytes()
	}
	var e syscall.Errno
	var err error
	switch op.Type {
	case ops.Msg:
		_, e, err = t.sys(op, syscall.SYS_MSGCTL, [6]uintptr{id, uintptr(cmd)}, b, 2)
	case ops.Sem:
		_, e, err = t.sys(op, syscall.SYS_SEMCTL, [6]uintptr{id, 0, uintptr(cmd)}, b, 3)
	default:
		_, e, err = t.sys(op, syscall.SYS_SHMCTL, [6]uintptr{id, uintptr(cmd)}, b, 2)
	}
	return e, err
}

// statObject is ipcStatObject issued by op's task.
func (t *thread) statObject(op ops.Op) (ops.Object, syscall.Errno, error) {
	if op.Task == 0 {
		o, e := ipcStatObject(op.Type, op.Obj.ID)
		return o, e, nil
	}
	var buf statBuf
	if e, err := t.ctl(op, ipcStat, &buf); e != 0 || err != nil {
		return ops.Object{}, e, err
	}
	return statObjectOf(op.Type, &buf), 0, nil
}
