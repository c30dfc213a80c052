//go:build linux && amd64

package kernel

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A task's call that may block (msgsnd, msgrcv) is started without waiting
// for its response. "Blocked" is decided from evidence only, never from a
// sleep (kernel-probe.md §3): the task's thread is in state S and its wchan
// is the function that sleeps in the call. A task that has set
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

// ready reports whether the response to the started request can be read.
func (p *taskProc) ready() (bool, error) { return p.readyWithin(0) }

// readyWithin reports whether the response to the started request can be
// read, waiting for it up to d: the thread sleeps in ppoll and wakes the
// moment the task writes its response.
func (p *taskProc) readyWithin(d time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(p.resp), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for {
		n, err := unix.Ppoll(fds, &ts, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("task t%d (pid %d): poll: %w", p.n, p.pid, err)
		}
		return n > 0, nil
	}
}

// asleep reports whether the task sleeps in a blocking IPC call now. The
// task's stat and wchan files stay open between calls and are re-read from
// offset 0 (each read of a /proc/<pid> file at offset 0 shows the present):
// opening them costs more than reading them, and every pending call is
// settled after every operation.
func (p *taskProc) asleep() (bool, error) {
	var b [512]byte
	stat, err := p.procRead(&p.statFD, "stat", b[:])
	if err != nil {
		return false, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false, nil
	}
	wchan, err := p.procRead(&p.wchanFD, "wchan", b[:])
	if err != nil {
		return false, err
	}
	return sleepsInCall(bytes.TrimSpace(wchan)), nil
}

// procRead reads /proc/<pid>/<name> into b through *fd, opening it on first
// use (*fd -1 means not open).
func (p *taskProc) procRead(fd *int, name string, b []byte) ([]byte, error) {
	if *fd < 0 {
		f, err := unix.Open("/proc/"+strconv.Itoa(p.pid)+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("task %d: open %s: %w", p.pid, name, err)
		}
		*fd = f
	}
	for {
		n, err := unix.Pread(*fd, b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("task %d: read %s: %w", p.pid, name, err)
		}
		return b[:n], nil
	}
}

// closeProcFiles closes the /proc files asleep keeps open.
func (p *taskProc) closeProcFiles() {
	for _, fd := range []*int{&p.statFD, &p.wchanFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// settleTimeout bounds how long a woken task may take to return or to fall
// asleep again; past it the adapter reports an error instead of guessing.
const settleTimeout = 10 * time.Second

// Between two looks at /proc, settle waits for the response in ppoll, from
// settleWaitMin doubling up to settleWaitMax: a task that returns is seen
// at once, one that falls asleep within settleWaitMax (plus a /proc read),
// and the worker leaves the CPU to the task meanwhile, which matters on a
// busy machine, where spinning would only delay the task it waits for.
const (
	settleWaitMin = 10 * time.Microsecond
	settleWaitMax = 200 * time.Microsecond
)

// settle waits until the task has either returned (true) or is asleep in
// its call (false).
func (p *taskProc) settle() (returned bool, err error) {
	deadline := time.Now().Add(settleTimeout)
	var wait time.Duration
	for {
		if ok, err := p.readyWithin(wait); err != nil || ok {
			return ok, err
		}
		if ok, err := p.asleep(); err != nil || ok {
			// Asleep now; a response written just before cannot be missed,
			// since a task that returned is not asleep in the call.
			if err == nil {
				if r, rerr := p.ready(); rerr == nil && r {
					return true, nil
				}
			}
			return false, err
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("task t%d (pid %d) neither returned nor fell asleep within %v", p.n, p.pid, settleTimeout)
		}
		wait = min(max(2*wait, settleWaitMin), settleWaitMax)
	}
}
