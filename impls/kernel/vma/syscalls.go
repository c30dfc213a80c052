package vma

import (
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/syscount"
)

// syscalls counts the system calls of the helper process serving now (a
// fork's child replaces it, a restart another), one counter per process,
// opened the first time it is asked for.
type syscalls struct {
	tp      syscount.Tracepoint // looked up once (looked)
	looked  bool
	pid     int
	counter *syscount.Counter
	absent  bool
}

// SyscallCount is how many system calls the helper serving now entered
// since it was first asked (and pid, which one: a count of another
// process is not comparable); ok false where the kernel cannot count them.
func (h *Helper) SyscallCount() (pid int, n int64, ok bool) {
	pid, _, _ = h.serving()
	h.sys.Lock()
	defer h.sys.Unlock()
	s := &h.sys.syscalls
	if s.absent || pid == 0 {
		return pid, 0, false
	}
	if !s.looked {
		tp, err := syscount.Lookup()
		if err != nil {
			s.absent = true
			return pid, 0, false
		}
		s.tp, s.looked = tp, true
	}
	if s.pid != pid || s.counter == nil {
		// The new counter is opened before the old one is closed: the
		// last counter of the tracepoint closed unregisters it, which
		// waits for an RCU grace period (a fork under --stats took 15 ms,
		// not 1).
		c, err := s.tp.OpenPID(pid)
		if s.counter != nil {
			_ = s.counter.Close()
		}
		if err != nil {
			s.absent, s.counter = true, nil
			return pid, 0, false
		}
		s.pid, s.counter = pid, c
	}
	n, err := s.counter.Read()
	return pid, n, err == nil
}

// closeSyscalls stops counting.
func (h *Helper) closeSyscalls() {
	h.sys.Lock()
	defer h.sys.Unlock()
	if h.sys.counter != nil {
		_ = h.sys.counter.Close()
		h.sys.counter = nil
	}
}
