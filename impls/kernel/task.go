//go:build linux && amd64

package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Tasks 1..ops.MaxTask are real processes: attachments, nattch and the exit
// of a task are per mm, so a thread would not do. A task process is this
// very binary re-executed with taskEnv set; the init below notices, serves
// syscalls over two pipes and exits, before main (or a test) ever runs. So
// every binary that links this package can host tasks.
//
// A task is started from the worker thread, at its first operation. It is
// forked from that thread, so it is born in the worker's private IPC
// namespace (no setns is needed; the task checks that its namespace is the
// one the worker named in taskEnv before it serves anything), and its
// parent-death signal (SIGKILL) fires when the worker thread ends: at Close,
// or when the process hosting the model dies, even by SIGKILL. Reset and
// Close also kill and reap every task.

// sigSetmask is SIG_SETMASK of rt_sigprocmask.
const sigSetmask = 2

// taskEnv carries the worker's IPC namespace ("ipc:[N]") to a task process.
const taskEnv = "IPCFUZZ_KERNEL_TASK_IPCNS"

// Task process file descriptors: requests in, responses out.
const (
	taskReqFD  = 3
	taskRespFD = 4
)

// taskReq is one syscall a task runs: nr with args, the buffer (copied in and
// back out) passed as argument bufArg if that is 0..5, as user as if not 0.
type taskReq struct {
	Nr     uint64
	Args   [6]uint64
	BufArg int64
	As     uint32
	_      uint32
	Buf    [32]uint64
}

// taskResp is the syscall's return value, errno and the buffer afterwards.
// Fatal is set when the task could not run the call as asked (it then
// exits).
type taskResp struct {
	R     uint64
	Errno uint64
	Fatal uint64
	Buf   [32]uint64
}

// taskSyscalls are the only syscalls a task runs.
var taskSyscalls = map[uint64]bool{
	syscall.SYS_SHMGET: true, syscall.SYS_SHMAT: true, syscall.SYS_SHMDT: true, syscall.SYS_SHMCTL: true,
	syscall.SYS_MSGGET: true, syscall.SYS_MSGCTL: true, syscall.SYS_SEMGET: true, syscall.SYS_SEMCTL: true,
	syscall.SYS_MSGSND: true, syscall.SYS_MSGRCV: true,
}

func init() {
	ns, ok := os.LookupEnv(taskEnv)
	if !ok {
		return
	}
	runtime.LockOSThread()
	if err := serveTask(ns); err != nil {
		fmt.Fprintf(os.Stderr, "ipcfuzz kernel task %d: %v\n", os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// serveTask is a task process's life: check the namespace, then run
// requests until the worker closes the request pipe.
func serveTask(wantNS string) error {
	ns, err := os.Readlink("/proc/thread-self/ns/ipc")
	if err != nil {
		return fmt.Errorf("reading my IPC namespace: %w", err)
	}
	if ns != wantNS {
		return fmt.Errorf("in IPC namespace %s, not the worker's %s: refusing to run", ns, wantNS)
	}
	self, err := currentCreds()
	if err != nil {
		return err
	}
	in, out := os.NewFile(taskReqFD, "requests"), os.NewFile(taskRespFD, "responses")
	for {
		var req taskReq
		if err := binary.Read(in, binary.NativeEndian, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the task's exit
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		resp := runTaskReq(self, &req)
		if err := binary.Write(out, binary.NativeEndian, &resp); err != nil {
			return fmt.Errorf("writing a response: %w", err)
		}
		if resp.Fatal != 0 {
			return errors.New("could not run a request as asked")
		}
	}
}

func runTaskReq(self creds, req *taskReq) taskResp {
	var resp taskResp
	if !taskSyscalls[req.Nr] {
		resp.Fatal = 1
		return resp
	}
	buf := req.Buf
	args := req.Args
	if req.BufArg >= 0 && req.BufArg < 6 {
		args[req.BufArg] = uint64(uintptr(unsafe.Pointer(&buf[0])))
	}
	if req.As != 0 {
		if err := becomeUser(self, req.As); err != nil {
			resp.Fatal = 1
			return resp
		}
	}
	// A task is a Go process, whose runtime signals its threads (SIGURG
	// for preemption, among others) and handles every signal: a msgsnd or
	// msgrcv asleep when one arrives returns EINTR, a result the script
	// never asked for. So every signal but SIGKILL and SIGSTOP (which
	// cannot be blocked: Reset, Close and the parent-death signal still
	// end the task) is blocked on this thread during the call; the runtime
	// gets whatever arrived once the call is over.
	all, old := ^uint64(0), uint64(0)
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		resp.Fatal = 1
		return resp
	}
	r, _, e := syscall.Syscall6(uintptr(req.Nr), uintptr(args[0]), uintptr(args[1]), uintptr(args[2]), uintptr(args[3]), uintptr(args[4]), uintptr(args[5]))
	runtime.KeepAlive(&buf)
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0); e != 0 {
		resp.Fatal = 1
	}
	if req.As != 0 {
		if err := restoreCreds(self); err != nil {
			resp.Fatal = 1
		}
	}
	resp.R, resp.Errno, resp.Buf = uint64(r), uint64(e), buf
	return resp
}

// taskProc is a running task process, seen from the worker thread.
type taskProc struct {
	cmd  *exec.Cmd
	req  *os.File // write end of the request pipe
	resp *os.File // read end of the response pipe
	pid  int
	// pending is the msgsnd or msgrcv the task sleeps in (or returned
	// from since it was last settled); nil when the task is idle.
	pending *pendingCall
	// statFD and wchanFD are /proc/<pid>/stat and wchan, kept open by
	// asleep (0 when not open).
	statFD, wchanFD int
}

// startTask starts the process of task n; it must run on the worker thread.
func (t *thread) startTask(n int) (*taskProc, error) {
	ns, err := os.Readlink("/proc/thread-self/ns/ipc")
	if err != nil {
		return nil, fmt.Errorf("reading the worker's IPC namespace: %w", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{fmt.Sprintf("ipcfuzz-task-t%d", n)}
	cmd.Env = []string{taskEnv + "=" + ns}
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, fmt.Errorf("starting task t%d: %w", n, err)
	}
	return &taskProc{cmd: cmd, req: reqW, resp: respR, pid: cmd.Process.Pid}, nil
}

// call runs one syscall in the task process.
func (p *taskProc) call(req *taskReq) (taskResp, error) {
	var resp taskResp
	if err := binary.Write(p.req, binary.NativeEndian, req); err != nil {
		return resp, fmt.Errorf("task %d: sending a request: %w", p.pid, err)
	}
	if err := binary.Read(p.resp, binary.NativeEndian, &resp); err != nil {
		return resp, fmt.Errorf("task %d: reading a response: %w", p.pid, err)
	}
	if resp.Fatal != 0 {
		return resp, fmt.Errorf("task %d could not run syscall %d as uid %d", p.pid, req.Nr, req.As)
	}
	return resp, nil
}

// exit ends the task the way a process exits on its own: it sees the end of
// its requests and calls exit. exit returns once the process is reaped, so
// that everything its exit does to shared memory is done.
func (p *taskProc) exit() error {
	p.req.Close()
	err := p.cmd.Wait()
	p.resp.Close()
	p.closeProcFiles()
	if err != nil {
		return fmt.Errorf("task %d: %w", p.pid, err)
	}
	return nil
}

// kill ends the task at once and reaps it.
func (p *taskProc) kill() {
	_ = p.cmd.Process.Kill()
	p.req.Close()
	_ = p.cmd.Wait()
	p.resp.Close()
	p.closeProcFiles()
}

// sys runs syscall nr as op's task and caller. buf, if not nil, is passed as
// argument bufArg. Task 0 is the worker thread itself (whose credentials
// apply has already switched); other tasks are started on first use.
func (t *thread) sys(op ops.Op, nr uintptr, args [6]uintptr, buf *statBuf, bufArg int) (uintptr, syscall.Errno, error) {
	if op.Task == 0 {
		if buf != nil {
			args[bufArg] = uintptr(unsafe.Pointer(buf))
		}
		r, _, e := syscall.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		runtime.KeepAlive(buf)
		return r, e, nil
	}
	p, err := t.task(int(op.Task))
	if err != nil {
		return 0, 0, err
	}
	req := taskReq{Nr: uint64(nr), BufArg: -1, As: op.As}
	for i, a := range args {
		req.Args[i] = uint64(a)
	}
	if buf != nil {
		req.BufArg = int64(bufArg)
		req.Buf = *(*[32]uint64)(unsafe.Pointer(buf))
	}
	resp, err := p.call(&req)
	if err != nil {
		return 0, 0, err
	}
	if buf != nil {
		*(*[32]uint64)(unsafe.Pointer(buf)) = resp.Buf
	}
	return uintptr(resp.R), syscall.Errno(resp.Errno), nil
}

// task returns the process of task n, starting it if needed.
func (t *thread) task(n int) (*taskProc, error) {
	if p := t.tasks[n]; p != nil {
		return p, nil
	}
	p, err := t.startTask(n)
	if err != nil {
		return nil, err
	}
	t.tasks[n] = p
	t.pids[p.pid] = ops.TaskPID(n, t.gen[n])
	return p, nil
}

// killTasks kills and reaps every task process.
func (t *thread) killTasks() {
	for n, p := range t.tasks {
		if p != nil {
			p.kill()
			t.tasks[n] = nil
		}
	}
}

func init() {
	if unsafe.Sizeof(statBuf{}) != unsafe.Sizeof([32]uint64{}) {
		panic("kernel: statBuf is not 256 bytes")
	}
}
