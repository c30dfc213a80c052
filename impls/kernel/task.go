//go:build linux && amd64

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Tasks 1..ops.MaxTask are real processes: attachments, nattch, semaphore
// undo lists and the exit of a task are per process, so a thread would not
// do. A task process is this very binary re-executed with taskEnv set; the
// init below notices, serves requests over two pipes and exits, before main
// (or a test) ever runs. So every binary that links this package can host
// tasks.
//
// A task is started from the worker thread, at the first operation that
// needs it. It is forked from that thread, so it is born in the worker's
// private IPC namespace; it checks that its namespace is the one the worker
// named in taskEnv before it serves anything. Its parent-death signal
// (SIGKILL) fires when the worker thread ends: at Close, or when the process
// hosting the model dies, even by SIGKILL. A task outlives a Reset (pool.go):
// it drops what it holds and joins the next namespace when a later script
// first uses it.

// taskEnv carries the worker's IPC namespace ("ipc:[N]") to a task process.
const taskEnv = "IPCFUZZ_KERNEL_TASK_IPCNS"

// Task process file descriptors: requests in, responses out.
const (
	taskReqFD  = 3
	taskRespFD = 4
)

// What a request asks of a task.
const (
	taskCall uint32 = iota + 1 // run syscall Nr
	taskJoin                   // setns into the IPC namespace whose path is the payload
)

// Flags of a taskCall.
const (
	// taskInterruptible leaves interruptSignal unblocked during the call,
	// so that an interrupt makes a sleeping call return EINTR.
	taskInterruptible uint32 = 1 << iota
)

// interruptSignal is the signal an interrupt sends; the task has a handler
// for it, so a semop, msgsnd or msgrcv asleep when it arrives returns EINTR.
const interruptSignal = unix.SIGUSR1

// maxTaskPayload bounds the buffer of one request (a GETALL of a huge array
// would need more: the adapter reports an error instead).
const maxTaskPayload = 1 << 20

// taskReq is the fixed part of a request. Payload bytes follow it; every
// argument i whose bit is set in PtrArgs is an offset into the payload,
// which the task turns into an address. The payload comes back, as the
// call left it, after the response. When JoinLen is not 0, the last JoinLen
// bytes of the payload are the path of an IPC namespace the task joins
// (as for taskJoin) before the call: the first call of a reused task in a
// script carries its join, which saves a round trip.
type taskReq struct {
	Kind    uint32
	Flags   uint32
	As      uint32
	PtrArgs uint32
	Nr      uint64
	Args    [6]uint64
	Len     uint64 // payload bytes
	JoinLen uint32
	_       uint32
}

// taskResp is the syscall's return value and errno, then Len payload
// bytes. Fatal is set when the task could not do what was asked (it then
// exits).
type taskResp struct {
	R     uint64
	Errno uint64
	Fatal uint64
	Len   uint64
}

// taskSyscalls are the only syscalls a task runs.
func taskSyscall(nr uint64) bool {
	switch nr {
	case unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMDT, unix.SYS_SHMCTL,
		unix.SYS_MSGGET, unix.SYS_MSGCTL, unix.SYS_MSGSND, unix.SYS_MSGRCV,
		unix.SYS_SEMGET, unix.SYS_SEMCTL, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP:
		return true
	}
	return false
}

func init() {
	ns, ok := os.LookupEnv(taskEnv)
	if !ok {
		return
	}
	runtime.LockOSThread()
	// Like the C server: a signal to the whole process group (Ctrl-C,
	// timeout -s INT) must not end a task in the middle of a script.
	ossignal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGTERM)
	if err := serveTask(ns); err != nil {
		fmt.Fprintf(os.Stderr, "ipcfuzz kernel task %d: %v\n", os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// serveTask is a task process's life: check the namespace, then run
// requests until the worker closes the request pipe.
func serveTask(wantNS string) error {
	// init runs on the main thread, where this goroutine stays locked:
	// the worker signals the thread whose id is the process id.
	if unix.Gettid() != unix.Getpid() {
		return errors.New("not serving on the main thread")
	}
	if err := checkNamespace(wantNS); err != nil {
		return err
	}
	self, err := currentCreds()
	if err != nil {
		return err
	}
	parent := os.Getppid()
	// The runtime installs its handler for interruptSignal at start and
	// drops the signal when nothing asked to be notified of it: a handler
	// runs, so a call it interrupts returns EINTR (msgsnd and msgrcv give
	// ERESTARTNOHAND, which a handler turns into EINTR; semop never
	// restarts). No Notify: it would start a goroutine, and a thread.
	var buf []byte
	for {
		var req taskReq
		if err := readFull(taskReqFD, structBytes(&req)); err != nil {
			if errors.Is(err, errEOF) {
				return nil // the task's exit
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		if req.Len > maxTaskPayload {
			return fmt.Errorf("a request of %d payload bytes", req.Len)
		}
		if uint64(cap(buf)) < req.Len {
			buf = make([]byte, req.Len)
		}
		payload := buf[:req.Len]
		if err := readFull(taskReqFD, payload); err != nil {
			return fmt.Errorf("reading a request's payload: %w", err)
		}
		if req.JoinLen > 0 && req.Kind == taskCall {
			at := len(payload) - int(req.JoinLen)
			if at < 0 {
				return errors.New("a join path longer than its payload")
			}
			if err := joinNamespace(payload[at:]); err != nil {
				return fmt.Errorf("joining the namespace before a call: %w", err)
			}
		}
		resp := runTaskReq(self, parent, &req, payload)
		if err := writeResp(taskRespFD, &resp, payload); err != nil {
			return fmt.Errorf("writing a response: %w", err)
		}
		if resp.Fatal != 0 {
			return errors.New("could not run a request as asked")
		}
	}
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

func runTaskReq(self creds, parent int, req *taskReq, payload []byte) taskResp {
	resp := taskResp{Len: uint64(len(payload))}
	switch req.Kind {
	case taskJoin:
		if err := joinNamespace(payload); err != nil {
			resp.Errno = uint64(errnoOf(err))
			if resp.Errno == 0 {
				resp.Fatal = 1
			}
		}
		return resp
	case taskCall:
	default:
		resp.Fatal = 1
		return resp
	}
	if !taskSyscall(req.Nr) {
		resp.Fatal = 1
		return resp
	}
	args := req.Args
	for i := range args {
		if req.PtrArgs&(1<<i) != 0 {
			if args[i] >= uint64(len(payload)) {
				resp.Fatal = 1
				return resp
			}
			args[i] = uint64(uintptr(unsafe.Pointer(&payload[args[i]])))
		}
	}
	if req.As != 0 {
		if err := becomeUser(self, req.As); err != nil {
			resp.Fatal = 1
			return resp
		}
		rearmParentDeath(parent)
	}
	// A task is a Go process, whose runtime signals its threads (SIGURG
	// for preemption, among others) and handles every signal: a call
	// asleep when one arrives returns EINTR, a result the script never
	// asked for. So every signal but SIGKILL and SIGSTOP (which cannot be
	// blocked: the parent-death signal still ends the task) is blocked on
	// this thread during the call, except interruptSignal for a call that
	// an interrupt may end; the runtime gets whatever arrived once the
	// call is over.
	mask := ^uint64(0)
	if req.Flags&taskInterruptible != 0 {
		mask &^= 1 << (interruptSignal - 1)
	}
	var old uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&mask)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		resp.Fatal = 1
		return resp
	}
	r, _, e := unix.Syscall6(uintptr(req.Nr), uintptr(args[0]), uintptr(args[1]), uintptr(args[2]), uintptr(args[3]), uintptr(args[4]), uintptr(args[5]))
	runtime.KeepAlive(payload)
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0); e != 0 {
		resp.Fatal = 1
	}
	if req.As != 0 {
		if err := restoreCreds(self); err != nil {
			resp.Fatal = 1
		}
		rearmParentDeath(parent)
	}
	resp.R, resp.Errno = uint64(r), uint64(e)
	return resp
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

// writeResp writes a response and its payload in one write (two when the
// payload is large).
func writeResp(fd int, resp *taskResp, payload []byte) error {
	h := structBytes(resp)
	if len(payload) > 4096 {
		if err := writeFull(fd, h); err != nil {
			return err
		}
		return writeFull(fd, payload)
	}
	var b [int(unsafe.Sizeof(taskResp{})) + 4096]byte
	n := copy(b[:], h)
	n += copy(b[n:], payload)
	return writeFull(fd, b[:n])
}

// structBytes is the memory of *p as bytes (for the fixed-size, pointer-free
// message headers).
func structBytes[T taskReq | taskResp](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// taskProc is a running task process, seen from the worker thread.
type taskProc struct {
	n    int // the task number
	cmd  *exec.Cmd
	req  int // write end of the request pipe (blocking)
	resp int // read end of the response pipe (blocking)
	pid  int
	// ns is the namespace generation of the worker the task is in.
	ns uint64
	// pending is the call the task sleeps in (or returned from since it
	// was last settled); nil when the task is idle.
	pending *pendingCall
	// statFD and wchanFD are /proc/<pid>/stat and wchan, kept open by
	// asleep (-1 when not open).
	statFD, wchanFD int
	// out is the reused buffer a request is written from.
	out []byte
	// joinPath, when not empty, is the namespace the task is to join
	// before its next call (which carries it); joinLen is the length of
	// the path the started request carries, read back with its answer.
	joinPath string
	joinLen  int
}

// startTask starts the process of task n; it must run on the worker thread,
// whose namespace the task is born in.
func (t *thread) startTask(n int) (*taskProc, error) {
	p, err := startTaskProcess(n, t.taskBin())
	if err != nil {
		return nil, err
	}
	p.ns = t.nsGen
	return p, nil
}

// taskBin returns the C task server to run as task processes, or "" for
// the Go task; it looks for (or builds) the server once.
func (t *thread) taskBin() string {
	if !t.taskBinKnown {
		t.taskBinKnown = true
		t.taskBinPath, _ = taskServer()
	}
	return t.taskBinPath
}

// startTaskProcess starts a task process from the calling thread, which
// must be locked: the process is born in the thread's IPC namespace and
// gets SIGKILL when the thread ends. n names it (0 for a spare). bin is the
// C task server, or "" for this binary re-executed as a Go task.
func startTaskProcess(n int, bin string) (*taskProc, error) {
	ns, err := os.Readlink("/proc/thread-self/ns/ipc")
	if err != nil {
		return nil, fmt.Errorf("reading the IPC namespace: %w", err)
	}
	var reqP, respP [2]int
	if err := unix.Pipe2(reqP[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if err := unix.Pipe2(respP[:], unix.O_CLOEXEC); err != nil {
		unix.Close(reqP[0])
		unix.Close(reqP[1])
		return nil, fmt.Errorf("pipe: %w", err)
	}
	childReq, childResp := os.NewFile(uintptr(reqP[0]), "requests"), os.NewFile(uintptr(respP[1]), "responses")
	cmd := exec.Command("/proc/self/exe")
	// One P: a task runs one call at a time, and fewer threads start and
	// exit faster.
	cmd.Env = []string{taskEnv + "=" + ns, "GOMAXPROCS=1"}
	if bin != "" {
		cmd = exec.Command(bin)
		cmd.Env = []string{taskEnv + "=" + ns}
	}
	cmd.Args = []string{"ipcfuzz-task"}
	cmd.ExtraFiles = []*os.File{childReq, childResp}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	childReq.Close()
	childResp.Close()
	if err != nil {
		unix.Close(reqP[1])
		unix.Close(respP[0])
		return nil, fmt.Errorf("starting task t%d: %w", n, err)
	}
	return &taskProc{n: n, cmd: cmd, req: reqP[1], resp: respP[0], pid: cmd.Process.Pid, statFD: -1, wchanFD: -1}, nil
}

// start sends a request without waiting for the response. A call carries
// the join the task owes, if any.
func (p *taskProc) start(req *taskReq, payload []byte) error {
	req.Len, req.JoinLen, p.joinLen = uint64(len(payload)), 0, 0
	var join string
	if p.joinPath != "" && req.Kind == taskCall {
		join, p.joinPath = p.joinPath, ""
		p.joinLen = len(join)
		req.JoinLen = uint32(len(join))
		req.Len += uint64(len(join))
	}
	if req.Len > maxTaskPayload {
		return fmt.Errorf("task t%d: a request of %d payload bytes (at most %d)", p.n, req.Len, maxTaskPayload)
	}
	p.out = append(append(append(p.out[:0], structBytes(req)...), payload...), join...)
	if err := writeFull(p.req, p.out); err != nil {
		return fmt.Errorf("task t%d (pid %d): sending a request: %w", p.n, p.pid, err)
	}
	return nil
}

// collect reads the response to the started request; its payload goes back
// into payload, which must be the one the request was started with.
func (p *taskProc) collect(payload []byte) (taskResp, error) {
	var resp taskResp
	if err := readFull(p.resp, structBytes(&resp)); err != nil {
		return resp, fmt.Errorf("task t%d (pid %d): reading a response: %w", p.n, p.pid, err)
	}
	if resp.Len != uint64(len(payload)+p.joinLen) {
		return resp, fmt.Errorf("task t%d (pid %d): a response of %d payload bytes, %d were sent", p.n, p.pid, resp.Len, len(payload)+p.joinLen)
	}
	if err := readFull(p.resp, payload); err != nil {
		return resp, fmt.Errorf("task t%d (pid %d): reading a response's payload: %w", p.n, p.pid, err)
	}
	if p.joinLen > 0 {
		if err := readFull(p.resp, make([]byte, p.joinLen)); err != nil {
			return resp, fmt.Errorf("task t%d (pid %d): reading a response's payload: %w", p.n, p.pid, err)
		}
		p.joinLen = 0
	}
	if resp.Fatal != 0 {
		return resp, fmt.Errorf("task t%d (pid %d) could not run its request", p.n, p.pid)
	}
	return resp, nil
}

// call runs one request in the task process and waits for it: for a
// while by polling, yielding the CPU in between (a task answers most calls
// within microseconds, and a worker that never sleeps need not be woken),
// then asleep in the read.
func (p *taskProc) call(req *taskReq, payload []byte) (taskResp, error) {
	if err := p.start(req, payload); err != nil {
		return taskResp{}, err
	}
	p.spinReady()
	return p.collect(payload)
}

// callSpin is how many times call polls for an answer before it sleeps.
const callSpin = 64

// spinReady polls for the answer to the started request up to callSpin
// times, yielding the CPU between polls.
func (p *taskProc) spinReady() {
	for range callSpin {
		if ok, err := p.ready(); ok || err != nil {
			return
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// exit ends the task the way a process exits on its own: it sees the end of
// its requests and calls exit. exit returns once the process is reaped, so
// that everything its exit does (exit_shm, exit_sem) is done.
func (p *taskProc) exit() error {
	unix.Close(p.req)
	err := p.cmd.Wait()
	p.closeFiles()
	if err != nil {
		return fmt.Errorf("task t%d (pid %d): %w", p.n, p.pid, err)
	}
	return nil
}

// kill ends the task at once and reaps it.
func (p *taskProc) kill() {
	_ = p.cmd.Process.Kill()
	unix.Close(p.req)
	_ = p.cmd.Wait()
	p.closeFiles()
}

func (p *taskProc) closeFiles() {
	unix.Close(p.resp)
	p.closeProcFiles()
}

// sys runs syscall nr as op's task and caller. buf, if not nil, is passed as
// argument bufArg (and comes back as the call left it). Task 0 is the
// worker thread itself (whose credentials apply has already switched);
// other tasks are started on first use.
func (t *thread) sys(op ops.Op, nr uintptr, args [6]uintptr, buf []byte, bufArg int) (uintptr, unix.Errno, error) {
	if op.Task == 0 {
		if buf != nil {
			args[bufArg] = uintptr(unsafe.Pointer(&buf[0]))
		}
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		runtime.KeepAlive(buf)
		return r, e, nil
	}
	p, err := t.task(int(op.Task))
	if err != nil {
		return 0, 0, err
	}
	req := taskReq{Kind: taskCall, Nr: uint64(nr), As: op.As}
	for i, a := range args {
		req.Args[i] = uint64(a)
	}
	if buf != nil {
		req.PtrArgs = 1 << bufArg
		req.Args[bufArg] = 0
	}
	resp, err := p.call(&req, buf)
	if err != nil {
		return 0, 0, err
	}
	return uintptr(resp.R), unix.Errno(resp.Errno), nil
}

// bytesOf is the memory of a stat buffer as bytes.
func (b *statBuf) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(b)), unsafe.Sizeof(*b))
}

func init() {
	if unsafe.Sizeof(statBuf{}) != 256 || unsafe.Sizeof(taskReq{}) != 88 || unsafe.Sizeof(taskResp{}) != 32 {
		panic("kernel: a buffer or message layout is not what the task protocol expects")
	}
}
