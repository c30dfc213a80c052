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
// its wchan is the function that sleeps in the call. A task that has set
// TASK_INTERRUPTIBLE but not yet left the CPU shows S with wchan 0, so S
// alone proves nothing.

// sleepsInCall reports whether wchan names a function a task sleeps in
// when a call blocks.
func sleepsInCall(wchan []byte) bool {
	switch string(wchan) {
	case "do_msgsnd", "do_msgrcv", "__do_semtimedop":
		return true
	}
	return false
}

// procFiles are a task's /proc/<pid>/stat and wchan, kept open between
// looks (-1 when not open) and re-read from offset 0 (each read of a
// /proc/<pid> file at offset 0 shows the present): opening them costs
// more than reading them, and every pending call is settled after every
// operation.
type procFiles struct {
	pid         int
	stat, wchan int
}

// asleep reports whether the task sleeps in a blocking IPC call now.
func (f *procFiles) asleep() (bool, error) {
	var b [512]byte
	stat, err := f.read(&f.stat, "stat", b[:])
	if err != nil {
		return false, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false, nil
	}
	wchan, err := f.read(&f.wchan, "wchan", b[:])
	if err != nil {
		return false, err
	}
	return sleepsInCall(bytes.TrimSpace(wchan)), nil
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
	for _, fd := range []*int{&f.stat, &f.wchan} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
