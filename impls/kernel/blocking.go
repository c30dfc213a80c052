//go:build linux && amd64

package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
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
func (p *taskProc) ready() (bool, error) {
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
		n, _, errno = syscall.Syscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&pfd)), 1, 0)
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

// asleep reports whether the task sleeps in a blocking IPC call now.
func (p *taskProc) asleep() (bool, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return false, fmt.Errorf("task %d: %w", p.pid, err)
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false, nil
	}
	wchan, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/wchan")
	if err != nil {
		return false, fmt.Errorf("task %d: %w", p.pid, err)
	}
	return sleepWchan[string(bytes.TrimSpace(wchan))], nil
}

// settleTimeout bounds how long a woken task may take to return or to fall
// asleep again; past it the adapter reports an error instead of guessing.
const settleTimeout = 10 * time.Second

// settle waits until the task has either returned (true) or is asleep in
// its call (false).
func (p *taskProc) settle() (returned bool, err error) {
	deadline := time.Now().Add(settleTimeout)
	for spins := 0; ; spins++ {
		if ok, err := p.ready(); err != nil || ok {
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
		if spins > 50 {
			time.Sleep(20 * time.Microsecond) // yield to the task on a busy machine
		}
	}
}
