//go:build linux && amd64

package task

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Proc is a running task process, seen from the thread that started it.
type Proc struct {
	n   int // the task number, for messages (0 for a spare)
	cmd *exec.Cmd
	// forked is the process of a task made by a fork (Fork), which has
	// no exec.Cmd.
	forked *os.Process
	req    int // write end of the request pipe (blocking)
	resp   int // read end of the response pipe (blocking)
	pid    int
	// ns is the namespace generation of the worker the task is in
	// (Pool.gen, or spareNS).
	ns uint64
	// files are the /proc files of the evidence that it sleeps.
	files procFiles
	// out is the reused buffer a request is written from.
	out []byte
	// pcs is the reused buffer of the program counters that came with the
	// last response collected (FlagCover).
	pcs []uint64
	// cover is the coverage of the pool the task is of (nil for a task
	// started outside a pool): while it is on, a call asks for coverage
	// and its program counters are added to it.
	cover *Coverage
	// timing is the timing of the pool the task is of (nil outside a
	// pool): while it is on, a call asks for its time, which is added to
	// it.
	timing *Timing
	// joinPath, when not empty, is the namespace the task is to join
	// before its next call (which carries it); joinLen is the length of
	// the path the started request carries, read back with its answer.
	joinPath string
	joinLen  int
	// Window is set by the owner once it has mapped the guard pages of
	// the task's shm window in this process.
	Window bool
}

// StartProcess starts a task process from the calling thread, which must
// be locked: the process is born in the thread's IPC namespace and gets
// SIGKILL when the thread ends. n names it in messages (0 for a spare).
// bin is the C task server, or "" for this binary re-executed as a Go task.
func StartProcess(n int, bin string) (*Proc, error) {
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
	cmd := command(ns, bin)
	cmd.ExtraFiles = []*os.File{childReq, childResp} // ReqFD and RespFD
	err = cmd.Start()
	childReq.Close()
	childResp.Close()
	if err != nil {
		unix.Close(reqP[1])
		unix.Close(respP[0])
		return nil, fmt.Errorf("starting task t%d: %w", n, err)
	}
	pid := cmd.Process.Pid
	return &Proc{n: n, cmd: cmd, req: reqP[1], resp: respP[0], pid: pid, files: procFiles{pid: pid, stat: -1, syscall: -1}}, nil
}

// command is the task process to start: the C server bin, or this binary
// as a Go task.
func command(ns, bin string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe")
	// One P: a task runs one call at a time, and fewer threads start and
	// exit faster.
	cmd.Env = []string{EnvNamespace + "=" + ns, "GOMAXPROCS=1"}
	if bin != "" {
		cmd = exec.Command(bin)
		cmd.Env = []string{EnvNamespace + "=" + ns}
	}
	cmd.Args = []string{"ipcfuzz-task"}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Pid is the task process's id.
func (p *Proc) Pid() int { return p.pid }

// Start sends a request without waiting for the response. A call carries
// the join the task owes, if any; a call and a join (a script's setns)
// carry FlagCover while the pool's coverage is on, and a call FlagTime
// while its timing is.
func (p *Proc) Start(req *Req, payload []byte) error {
	req.Len, req.JoinLen, p.joinLen = uint64(len(payload)), 0, 0
	if (req.Kind == KindCall || req.Kind == KindJoin) && p.cover != nil && p.cover.On {
		req.Flags |= FlagCover
	}
	if req.Kind == KindCall && p.timing != nil && p.timing.On {
		req.Flags |= FlagTime
	}
	var join string
	if p.joinPath != "" && (req.Kind == KindCall || req.Kind == KindFork) {
		join, p.joinPath = p.joinPath, ""
		p.joinLen = len(join)
		req.JoinLen = uint32(len(join))
		req.Len += uint64(len(join))
	}
	if req.Len > MaxPayload {
		return fmt.Errorf("task t%d: a request of %d payload bytes (at most %d)", p.n, req.Len, MaxPayload)
	}
	p.out = append(append(append(p.out[:0], structBytes(req)...), payload...), join...)
	if err := writeFull(p.req, p.out); err != nil {
		return fmt.Errorf("task t%d (pid %d): sending a request: %w", p.n, p.pid, err)
	}
	return nil
}

// Collect reads the response to the started request; its payload goes back
// into payload, which must be the one the request was started with. The
// program counters that follow it (a covered call) are PCs until the next
// Collect, and are added to the pool's coverage while it is on; the time
// of its syscall (a timed call) to the pool's timing while it is on.
func (p *Proc) Collect(payload []byte) (Resp, error) {
	var resp Resp
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
	if err := p.readPCs(resp.PCs); err != nil {
		return resp, err
	}
	if p.timing != nil && p.timing.On {
		p.timing.Nanos += int64(resp.Nanos)
		p.timing.Reads += int64(resp.Clocks)
	}
	if resp.Fatal != 0 {
		return resp, fmt.Errorf("task t%d (pid %d) could not run its request", p.n, p.pid)
	}
	return resp, nil
}

// readPCs reads the n program counters that follow a response's payload
// into p.pcs, and adds them to the pool's coverage while it is on.
func (p *Proc) readPCs(n uint64) error {
	p.pcs = p.pcs[:0]
	if n == 0 {
		return nil
	}
	if n >= CoverWords {
		return fmt.Errorf("task t%d (pid %d): a response with %d program counters (at most %d)", p.n, p.pid, n, CoverWords-1)
	}
	p.pcs = slices.Grow(p.pcs, int(n))[:n]
	if err := readFull(p.resp, wordBytes(p.pcs)); err != nil {
		return fmt.Errorf("task t%d (pid %d): reading a response's program counters: %w", p.n, p.pid, err)
	}
	if p.cover != nil && p.cover.On {
		p.cover.PCs = append(p.cover.PCs, p.pcs...)
	}
	return nil
}

// PCs returns the kernel program counters that came with the last response
// collected: those of its call, when it asked for coverage (FlagCover) and
// the kernel has KCOV. The slice is reused by the next Collect.
func (p *Proc) PCs() []uint64 { return p.pcs }

// Call runs one request in the task process and waits for it, asleep in
// the read of its answer. It does not poll first: measured on a 2-CPU
// machine (PVM host, and a TCG guest), polling with sched_yield between
// looks (64 of them, as it did) changed no run's time, and made 90% of the
// system calls of a shm compare in the guest (36-43 an operation against
// 3.6 without): CPU that the other side and a second job can use.
func (p *Proc) Call(req *Req, payload []byte) (Resp, error) {
	if err := p.Start(req, payload); err != nil {
		return Resp{}, err
	}
	return p.Collect(payload)
}

// Ready reports whether the response to the started request can be read.
func (p *Proc) Ready() (bool, error) { return p.ReadyWithin(0) }

// ReadyWithin reports whether the response to the started request can be
// read, waiting for it up to d: the thread sleeps in ppoll and wakes the
// moment the task writes its response.
func (p *Proc) ReadyWithin(d time.Duration) (bool, error) {
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

// Interrupt sends the task InterruptSignal: a call it sleeps in returns
// EINTR.
func (p *Proc) Interrupt() error {
	if err := unix.Tgkill(p.pid, p.pid, InterruptSignal); err != nil {
		return fmt.Errorf("task t%d (pid %d): interrupting: %w", p.n, p.pid, err)
	}
	return nil
}

// Exit ends the task the way a process exits on its own: it sees the end
// of its requests and calls exit. Exit returns once the process is reaped,
// so that everything its exit does (exit_shm, exit_sem) is done.
func (p *Proc) Exit() error {
	unix.Close(p.req)
	err := p.wait()
	p.closeFiles()
	if err != nil {
		return fmt.Errorf("task t%d (pid %d): %w", p.n, p.pid, err)
	}
	return nil
}

// Kill ends the task at once and reaps it.
func (p *Proc) Kill() {
	p.signalKill()
	p.reap()
}

// signalKill sends the task SIGKILL and closes its request pipe.
func (p *Proc) signalKill() {
	if p.forked != nil {
		_ = p.forked.Kill()
	} else {
		_ = p.cmd.Process.Kill()
	}
	unix.Close(p.req)
}

// reap waits for the end of a killed task and closes what is left of it.
func (p *Proc) reap() {
	_ = p.wait()
	p.closeFiles()
}

// wait reaps the process: an error if it did not exit with status 0.
func (p *Proc) wait() error {
	if p.forked == nil {
		return p.cmd.Wait()
	}
	st, err := p.forked.Wait()
	if err == nil && !st.Success() {
		err = fmt.Errorf("%s", st)
	}
	return err
}

func (p *Proc) closeFiles() {
	unix.Close(p.resp)
	p.files.close()
}
