//go:build linux && amd64

package task

import (
	"bytes"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// A task's call that may block (msgsnd, msgrcv, semop) is started without
// waiting for its response. "Blocked" is decided from evidence only, never
// from a sleep (kernel-probe.md §3): the task's thread is in state S and
// /proc/<pid>/syscall shows it inside one of the calls that sleep. The
// kernel fills that file only for a task off the CPU in the state it
// showed (task_current_syscall waits for it to leave the CPU, and says
// "running" otherwise), so a task that has set TASK_INTERRUPTIBLE but not
// yet slept is not taken for asleep.
//
// The syscall number is the evidence, not the function the task sleeps in
// (wchan): which function that is depends on the compiler's inlining
// (ksys_msgrcv, do_msgrcv, do_msgrcv.constprop.0 on three builds of one
// 6.1 source, vm-probe.md §5), the syscall number on nothing but the
// architecture. Inside these calls the only interruptible sleep is the
// wait for the queue or the semaphores (allocation and page faults sleep
// uninterruptibly, state D).

// blockingCalls are the calls a task sleeps in when its operation blocks.
var blockingCalls = [...]int{unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP}

// SleepsInCall reports whether a thread whose /proc/<pid>/stat is stat and
// whose /proc/<pid>/syscall is syscall sleeps in a blocking IPC call.
func SleepsInCall(stat, syscall []byte) bool {
	if !sleeping(stat) {
		return false
	}
	nr, _, _ := bytes.Cut(bytes.TrimSpace(syscall), []byte(" "))
	n, err := strconv.Atoi(string(nr))
	if err != nil { // "running", or empty
		return false
	}
	for _, c := range blockingCalls {
		if n == c {
			return true
		}
	}
	return false
}

// sleeping reports whether stat, a /proc/<pid>/stat, shows state S.
func sleeping(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'S'
}

// procFiles are a task's /proc/<pid>/stat and syscall, kept open between
// looks (-1 when not open) and re-read from offset 0 (each read of a
// /proc/<pid> file at offset 0 shows the present): opening them costs
// more than reading them, and every pending call is settled after every
// operation.
type procFiles struct {
	pid           int
	stat, syscall int
}

// asleep reports whether the task sleeps in a blocking IPC call now.
func (f *procFiles) asleep() (bool, error) {
	var b, c [512]byte
	stat, err := f.read(&f.stat, "stat", b[:])
	if err != nil {
		return false, err
	}
	if !sleeping(stat) {
		return false, nil
	}
	sc, err := f.read(&f.syscall, "syscall", c[:])
	if err != nil {
		return false, err
	}
	return SleepsInCall(stat, sc), nil
}

// read reads /proc/<pid>/<name> into b through *fd, opening it on first
// use.
func (f *procFiles) read(fd *int, name string, b []byte) ([]byte, error) {
	if *fd < 0 {
		o, err := unix.Open("/proc/"+strconv.Itoa(f.pid)+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("task %d: open %s: %w", f.pid, name, err)
		}
		*fd = o
	}
	for {
		n, err := unix.Pread(*fd, b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("task %d: read %s: %w", f.pid, name, err)
		}
		return b[:n], nil
	}
}

// close closes the files that are open.
func (f *procFiles) close() {
	for _, fd := range []*int{&f.stat, &f.syscall} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
