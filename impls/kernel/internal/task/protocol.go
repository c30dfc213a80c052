//go:build linux && amd64

package task

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnvNamespace carries the worker's IPC namespace ("ipc:[N]") to a task
// process; a process started with it set serves as a task.
const EnvNamespace = "IPCFUZZ_KERNEL_TASK_IPCNS"

// A task process's file descriptors: requests in, responses out.
const (
	ReqFD  = 3
	RespFD = 4
)

// What a request asks of a task (Req.Kind).
const (
	KindCall  uint32 = iota + 1 // run syscall Nr
	KindJoin                    // setns into the IPC namespace whose path is the payload
	KindTouch                   // read (Args[1] 0) or write (1) the byte Args[2] at address Args[0]
	// KindFork forks the task (the C server only): the child, a child of
	// the task's parent by CLONE_PARENT, serves requests on two new pipes;
	// the answer's R is its pid and its 16-byte payload the task's fds of
	// the child's request-pipe write end and response-pipe read end, which
	// the owner takes (pidfd_getfd) before it sends KindForkDone.
	KindFork
	// KindForkDone closes the task's ends of the last fork's pipes.
	KindForkDone
)

// TouchFault is the Errno of a KindTouch whose access took SIGSEGV (the
// task catches it and carries on); the byte read is R otherwise.
const TouchFault = uint64(unix.EFAULT)

// Flags of a KindCall request.
const (
	// Interruptible leaves InterruptSignal unblocked during the call, so
	// that an interrupt makes a sleeping call return EINTR.
	Interruptible uint32 = 1 << iota
	// FlagCover asks the task to trace the call with KCOV: the program
	// counters of the kernel code the syscall ran follow the response's
	// payload (Resp.PCs of them). The task enables KCOV at its first such
	// call (a forked task its own, at its own first); where the kernel
	// has no KCOV it answers 0 PCs. Without the flag the task opens and
	// reads nothing.
	FlagCover
	// FlagTime asks the task for the CPU time of the call's syscall
	// (Resp.Nanos): its thread's CPU clock read right before and right
	// after it, less what two reads alone take (measured at its first
	// timed call), and the number of its clock reads (Resp.Clocks).
	// Without the flag the task reads no clock.
	FlagTime
)

// CoverWords is the size of a task's KCOV buffer in words: the count,
// then at most CoverWords-1 program counters of one call (2 MiB, as the
// worker thread's and the VMA helper's; one call reaches a few thousand).
const CoverWords = 1 << 18

// Fatal is Resp.Fatal when the task could not do what was asked; it then
// exits.
const Fatal = 1

// InterruptSignal is the signal an interrupt sends; the task has a handler
// for it, so a semop, msgsnd or msgrcv asleep when it arrives returns EINTR.
const InterruptSignal = unix.SIGUSR1

// MaxPayload bounds the buffer of one request (a GETALL of a huge array
// would need more: the adapter reports an error instead).
const MaxPayload = 1 << 20

// Req is the fixed part of a request. Payload bytes follow it; every
// argument i whose bit is set in PtrArgs is an offset into the payload,
// which the task turns into an address. The payload comes back, as the
// call left it, after the response. When JoinLen is not 0, the last JoinLen
// bytes of the payload are the path of an IPC namespace the task joins
// (as for KindJoin) before the call: the first call of a reused task in a
// script carries its join, which saves a round trip.
type Req struct {
	Kind    uint32
	Flags   uint32
	As      uint32 // the uid to run the call as, 0 for the task's own
	PtrArgs uint32
	Nr      uint64
	Args    [6]uint64
	Len     uint64 // payload bytes
	JoinLen uint32
	_       uint32
}

// Resp is the syscall's return value and errno, then Len payload bytes,
// then PCs program counters (8 bytes each, the task's byte order) when the
// request asked for coverage (FlagCover). Fatal is set when the task could
// not do what was asked (it then exits). Nanos is the CPU time of the
// call's syscall when the request asked for it (FlagTime), 0 otherwise,
// and Clocks the clock reads (system calls) the task made to time it.
type Resp struct {
	R      uint64
	Errno  uint64
	Fatal  uint64
	Len    uint64
	PCs    uint64
	Nanos  uint64
	Clocks uint64
}

// The sizes of Req and Resp on the wire; the C server checks its structs
// against them.
const (
	ReqSize  = int(unsafe.Sizeof(Req{}))
	RespSize = int(unsafe.Sizeof(Resp{}))
)

// Syscalls are the only syscalls a task runs.
var Syscalls = []uint64{
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMDT, unix.SYS_SHMCTL,
	unix.SYS_MSGGET, unix.SYS_MSGCTL, unix.SYS_MSGSND, unix.SYS_MSGRCV,
	unix.SYS_SEMGET, unix.SYS_SEMCTL, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP,
	unix.SYS_MMAP, unix.SYS_MUNMAP, // the guard pages of the shm window, and its clearing
	unix.SYS_UNSHARE, // unshare(CLONE_NEWIPC): a task's own IPC namespace
}

// errEOF is the end of a pipe before any byte of a message.
var errEOF = errors.New("end of file")

// readFull reads len(b) bytes from fd (a blocking pipe).
func readFull(fd int, b []byte) error {
	for got := 0; got < len(b); {
		n, err := unix.Read(fd, b[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			if got == 0 {
				return errEOF
			}
			return fmt.Errorf("short read (%d of %d bytes)", got, len(b))
		}
		got += n
	}
	return nil
}

// writeFull writes all of b to fd (a blocking pipe).
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// structBytes is the memory of *p as bytes (for the fixed-size, pointer-free
// message headers).
func structBytes[T Req | Resp](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// wordBytes is the memory of words as bytes (the program counters that
// follow a response).
func wordBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

func init() {
	if ReqSize != 88 || RespSize != 56 {
		panic("kernel task: a message layout is not what the task protocol expects")
	}
}
