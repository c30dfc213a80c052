//go:build linux && amd64

package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// A task's call that may block (msgsnd, msgrcv) is started without waiting
// for its response. "Blocked" is decided from evidence only, never from a
// sleep (kernel-probe.md §3): the task's thread is in state S and its wchan
// is the function that sleeps in the call. A task that has set
// TASK_INTERRUPTIBLE but not yet left the CPU shows S with wchan 0, so S
// alone proves nothing.

// sleepWchan are the functions a task sleeps in when a call blocks.
var sleepWchan = map[string]bool{"do_msgsnd": true, "do_msgrcv": true, "__do_semtimedop": true}

// start sends a request without waiting for the response.
func (p *taskProc) start(req *taskReq) error {
	if err := binary.Write(p.req, binary.NativeEndian, req); err != nil {
		return fmt.Errorf("task %d: sending a request: %w", p.pid, err)
	}
	return nil
}

// ready reports whether the response to the started request can be read.
func (p *taskProc) ready() (bool, error) { return p.readyWithin(0) }

// readyWithin reports whether the response to the started request can be
// read, waiting for it up to d: the thread sleeps in ppoll and wakes the
// moment the task writes its response.
func (p *taskProc) readyWithin(d time.Duration) (bool, error) {
	rc, err := p.resp.SyscallConn()
	if err != nil {
		return false, err
	}
	var n uintptr
	var errno syscall.Errno
	cerr := rc.Control(func(fd uintptr) {
		pfd := struct {
			fd      int32
			events  int16
			revents int16
		}{fd: int32(fd), events: 0x1} // POLLIN
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		for {
			n, _, errno = syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			if errno != syscall.EINTR {
				break
			}
		}
	})
	if cerr != nil {
		return false, cerr
	}
	if errno != 0 {
		return false, fmt.Errorf("task %d: poll: %w", p.pid, errno)
	}
	return n > 0, nil
}

// collect reads the response to the started request.
func (p *taskProc) collect(req *taskReq) (taskResp, error) {
	var resp taskResp
	if err := binary.Read(p.resp, binary.NativeEndian, &resp); err != nil {
		return resp, fmt.Errorf("task %d: reading a response: %w", p.pid, err)
	}
	if resp.Fatal != 0 {
		return resp, fmt.Errorf("task %d could not run syscall %d as uid %d", p.pid, req.Nr, req.As)
	}
	return resp, nil
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
	return sleepWchan[string(bytes.TrimSpace(wchan))], nil
}

// procRead reads /proc/<pid>/<name> into b through *fd, opening it on first
// use (*fd 0 means not open: 0 is stdin, never a /proc file of ours).
func (p *taskProc) procRead(fd *int, name string, b []byte) ([]byte, error) {
	if *fd == 0 {
		f, err := syscall.Open("/proc/"+strconv.Itoa(p.pid)+"/"+name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("task %d: open %s: %w", p.pid, name, err)
		}
		*fd = f
	}
	for {
		n, err := syscall.Pread(*fd, b, 0)
		if err == syscall.EINTR {
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
		if *fd != 0 {
			syscall.Close(*fd)
			*fd = 0
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
			return false, fmt.Errorf("task %d neither returned nor fell asleep within %v", p.pid, settleTimeout)
		}
		wait = min(max(2*wait, settleWaitMin), settleWaitMax)
	}
}
