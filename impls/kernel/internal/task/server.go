//go:build linux && amd64

package task

import (
	"errors"
	"fmt"
	"os"
	ossignal "os/signal"
	"runtime"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/creds"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
)

// The Go task: where no C server is built (cserver.go), a task process is
// this very binary re-executed with EnvNamespace set; the init below
// notices, serves requests over two pipes and exits, before main (or a
// test) ever runs. So every binary that links this package can host tasks.

func init() {
	ns, ok := os.LookupEnv(EnvNamespace)
	if !ok {
		return
	}
	runtime.LockOSThread()
	// Like the C server: a signal to the whole process group (Ctrl-C,
	// timeout -s INT) must not end a task in the middle of a script.
	ossignal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGTERM)
	if err := serve(ns); err != nil {
		fmt.Fprintf(os.Stderr, "ipcfuzz kernel task %d: %v\n", os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// server is a task process's state: its credentials at start, and its
// parent.
type server struct {
	self   creds.Creds
	parent int
	buf    []byte
	// kcov is KCOV on the serving thread, opened at the first call that
	// asks for coverage (FlagCover) and kept for the process's life;
	// noKCOV is set where the kernel has none, and the open is not tried
	// again. pcs is the reused buffer of a call's program counters.
	kcov   *kcov.Tracer
	noKCOV bool
	pcs    []uint64
	// clock times a call that asks for it (FlagTime); nanos is the time
	// of the last call timed, clocks the reads it took.
	clock  CPUClock
	nanos  int64
	clocks int64
}

// serve is a task process's life: check the namespace, then run requests
// until the worker closes the request pipe.
func serve(wantNS string) error {
	// init runs on the main thread, where this goroutine stays locked:
	// the worker signals the thread whose id is the process id.
	if unix.Gettid() != unix.Getpid() {
		return errors.New("not serving on the main thread")
	}
	if err := checkNamespace(wantNS); err != nil {
		return err
	}
	self, err := creds.Current()
	if err != nil {
		return err
	}
	// The runtime installs its handler for InterruptSignal at start and
	// drops the signal when nothing asked to be notified of it: a handler
	// runs, so a call it interrupts returns EINTR (msgsnd and msgrcv give
	// ERESTARTNOHAND, which a handler turns into EINTR; semop never
	// restarts). No Notify: it would start a goroutine, and a thread.
	s := &server{self: self, parent: os.Getppid()}
	for {
		done, err := s.serveOne()
		if done || err != nil {
			return err
		}
	}
}

// serveOne reads a request, runs it and answers; done is the end of the
// requests (the task's exit).
func (s *server) serveOne() (done bool, err error) {
	var req Req
	if err := readFull(ReqFD, structBytes(&req)); err != nil {
		if errors.Is(err, errEOF) {
			return true, nil
		}
		return false, fmt.Errorf("reading a request: %w", err)
	}
	if req.Len > MaxPayload {
		return false, fmt.Errorf("a request of %d payload bytes", req.Len)
	}
	if uint64(cap(s.buf)) < req.Len {
		s.buf = make([]byte, req.Len)
	}
	payload := s.buf[:req.Len]
	if err := readFull(ReqFD, payload); err != nil {
		return false, fmt.Errorf("reading a request's payload: %w", err)
	}
	if req.JoinLen > 0 && req.Kind == KindCall {
		at := len(payload) - int(req.JoinLen)
		if at < 0 {
			return false, errors.New("a join path longer than its payload")
		}
		if err := joinNamespace(payload[at:]); err != nil {
			return false, fmt.Errorf("joining the namespace before a call: %w", err)
		}
	}
	s.pcs, s.nanos, s.clocks = s.pcs[:0], 0, 0
	resp, err := s.run(&req, payload)
	if err != nil {
		return false, err
	}
	resp.PCs, resp.Nanos, resp.Clocks = uint64(len(s.pcs)), uint64(s.nanos), uint64(s.clocks)
	if err := writeResp(RespFD, &resp, payload, s.pcs); err != nil {
		return false, fmt.Errorf("writing a response: %w", err)
	}
	if resp.Fatal != 0 {
		return false, errors.New("could not run a request as asked")
	}
	return false, nil
}

// checkNamespace fails unless the calling thread is in the IPC namespace
// want ("ipc:[N]").
func checkNamespace(want string) error {
	ns, err := os.Readlink("/proc/thread-self/ns/ipc")
	if err != nil {
		return fmt.Errorf("reading my IPC namespace: %w", err)
	}
	if ns != want {
		return fmt.Errorf("in IPC namespace %s, not the worker's %s: refusing to run", ns, want)
	}
	return nil
}

// run carries out one request; an error is a failure to enable KCOV, after
// which the task exits without an answer.
func (s *server) run(req *Req, payload []byte) (Resp, error) {
	resp := Resp{Len: uint64(len(payload))}
	switch req.Kind {
	case KindJoin:
		if err := joinNamespace(payload); err != nil {
			resp.Errno = uint64(errnoOf(err))
			if resp.Errno == 0 {
				resp.Fatal = Fatal
			}
		}
		return resp, nil
	case KindCall:
		var t *kcov.Tracer
		if req.Flags&FlagCover != 0 {
			var err error
			if t, err = s.tracer(); err != nil {
				return resp, err
			}
		}
		return s.call(req, payload, t), nil
	case KindTouch:
		v, fault := Touch(uintptr(req.Args[0]), req.Args[1] != 0, uint8(req.Args[2]))
		resp.R = uint64(v)
		if fault {
			resp.Errno = TouchFault
		}
		return resp, nil
	}
	resp.Fatal = Fatal
	return resp, nil
}

// tracer returns KCOV on the serving thread (the main thread, locked by
// init), opening it at first use; nil where the kernel has none.
func (s *server) tracer() (*kcov.Tracer, error) {
	if s.kcov != nil || s.noKCOV {
		return s.kcov, nil
	}
	t, err := kcov.Open(CoverWords)
	switch {
	case errors.Is(err, kcov.ErrNoKCOV):
		s.noKCOV = true
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("enabling KCOV for a covered call: %w", err)
	}
	s.kcov = t
	return t, nil
}

// call runs the syscall of a KindCall request, as req.As when it is not 0;
// with t not nil, the program counters of the syscall go to s.pcs.
func (s *server) call(req *Req, payload []byte, t *kcov.Tracer) Resp {
	resp := Resp{Len: uint64(len(payload)), Fatal: Fatal}
	if !slices.Contains(Syscalls, req.Nr) {
		return resp
	}
	args := req.Args
	for i := range args {
		if req.PtrArgs&(1<<i) != 0 {
			if args[i] >= uint64(len(payload)) {
				return resp
			}
			args[i] = uint64(uintptr(unsafe.Pointer(&payload[args[i]])))
		}
	}
	if req.As != 0 {
		if err := creds.BecomeUser(s.self, req.As); err != nil {
			return resp
		}
		rearmParentDeath(s.parent)
	}
	resp.Fatal = 0
	r, e, ok := s.callMasked(req, args, t)
	runtime.KeepAlive(payload)
	if !ok {
		resp.Fatal = Fatal
	}
	if req.As != 0 {
		if err := creds.Restore(s.self); err != nil {
			resp.Fatal = Fatal
		}
		rearmParentDeath(s.parent)
	}
	resp.R, resp.Errno = uint64(r), uint64(e)
	return resp
}

// callMasked runs the syscall with every signal blocked but, for an
// interruptible call, InterruptSignal. A task is a Go process, whose
// runtime signals its threads (SIGURG for preemption, among others) and
// handles every signal: a call asleep when one arrives returns EINTR, a
// result the script never asked for. SIGKILL and SIGSTOP cannot be blocked:
// the parent-death signal still ends the task. The runtime gets whatever
// arrived once the call is over. ok is false when the mask could not be
// set or put back. With t not nil, KCOV's buffer is emptied right before
// the syscall and read into s.pcs right after it, before the mask is put
// back (and a signal that waited is handled). A request with FlagTime
// leaves the CPU time of its syscall in s.nanos.
func (s *server) callMasked(req *Req, args [6]uint64, t *kcov.Tracer) (r uintptr, e unix.Errno, ok bool) {
	mask := ^uint64(0)
	if req.Flags&Interruptible != 0 {
		mask &^= 1 << (InterruptSignal - 1)
	}
	var old uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&mask)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return 0, 0, false
	}
	timed := req.Flags&FlagTime != 0
	var cost, t0 int64
	if timed {
		reads := s.clock.Reads
		defer func() { s.clocks = s.clock.Reads - reads }()
		cost = s.clock.Cost()
	}
	if t != nil {
		t.Reset()
	}
	if timed {
		t0 = s.clock.Now()
	}
	r, _, e = unix.Syscall6(uintptr(req.Nr), uintptr(args[0]), uintptr(args[1]), uintptr(args[2]), uintptr(args[3]), uintptr(args[4]), uintptr(args[5]))
	if timed {
		s.nanos = max(s.clock.Now()-t0-cost, 0)
	}
	if t != nil {
		s.pcs = t.PCs(s.pcs)
	}
	_, _, me := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	return r, e, me == 0
}

// rearmParentDeath sets the parent-death signal again after a change of
// effective ids, which clears it (commit_creds): a task asleep as another
// user when its worker dies must die too. A parent that died in between is
// seen by its pid.
func rearmParentDeath(parent int) {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil || os.Getppid() != parent {
		os.Exit(3)
	}
}

// joinNamespace moves the calling thread into the IPC namespace at path
// (the worker's, /proc/<pid>/task/<tid>/ns/ipc) and checks that it got
// there. Leaving a namespace applies the task's semaphore adjustments
// there and drops its undo list (exit_sem, as at exit).
func joinNamespace(path []byte) error {
	fd, err := unix.Open(string(path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWIPC); err != nil {
		return err
	}
	want, err := os.Readlink(string(path))
	if err != nil {
		return err
	}
	return checkNamespace(want)
}

// errnoOf is the errno of a failed open or setns (EIO for an error of
// another kind).
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

// writeResp writes a response and its payload in one write (two when the
// payload is large), then the program counters pcs, if any.
func writeResp(fd int, resp *Resp, payload []byte, pcs []uint64) error {
	h := structBytes(resp)
	if len(payload) > 4096 {
		if err := writeFull(fd, h); err != nil {
			return err
		}
		if err := writeFull(fd, payload); err != nil {
			return err
		}
	} else {
		var b [RespSize + 4096]byte
		n := copy(b[:], h)
		n += copy(b[n:], payload)
		if err := writeFull(fd, b[:n]); err != nil {
			return err
		}
	}
	if len(pcs) == 0 {
		return nil
	}
	return writeFull(fd, wordBytes(pcs))
}
