//go:build linux && amd64

package vma

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// pageSize is the page size the helper and the vocabulary assume.
const pageSize = 4096

// Helper is a running vmahelper process. It implements ops.AddressSpace;
// its methods are safe for concurrent use (calls are serialized).
type Helper struct {
	opt Options
	// pmu guards the process now serving (a fork replaces it).
	pmu      sync.Mutex
	pid      int
	proc     *os.Process
	exited   chan struct{} // closed when proc has been reaped
	startBrk uint64
	quirks   ops.VMAQuirks
	kernel   string

	mu   sync.Mutex
	req  *os.File // our end of the request pipe
	resp *os.File // our end of the response pipe, blocking
	// respR reads resp: a response's header and payload, which the
	// helper writes at once, come in one read.
	respR  *bufio.Reader
	broken error // set once the helper cannot be trusted any more
	// ahead are the requests Pipeline sent whose answers no call has
	// read yet, in order.
	ahead []request
	// inodes maps the inode of each file a script opened to its ordinal.
	inodes map[uint64]int
	// timing, while on, asks each request sent for the helper's CPU time
	// on it and adds it up (TimeSyscalls, SyscallTime).
	timing struct {
		on           bool
		nanos, reads int64
	}

	// sys counts the serving helper's system calls (syscalls.go).
	sys struct {
		sync.Mutex
		syscalls
	}

	release   chan struct{} // lets the spawning thread go
	closeOnce sync.Once
	stderr    *bytes.Buffer
	stderrW   sync.WaitGroup
}

var _ ops.AddressSpace = (*Helper)(nil)

// Start builds (if needed) and starts a helper. When ctx is done the helper
// is killed and every later call fails.
func Start(ctx context.Context, opt Options) (*Helper, error) {
	opt = opt.withDefaults()
	path, err := Build(ctx, opt)
	if err != nil {
		return nil, err
	}
	h := &Helper{opt: opt, inodes: map[uint64]int{}, exited: make(chan struct{}), stderr: &bytes.Buffer{}}
	h.release = make(chan struct{})
	started := make(chan error, 1)
	go h.spawn(path, started)
	if err := <-started; err != nil {
		return nil, err
	}
	go h.watch(ctx)
	if err := h.readHello(); err != nil {
		h.kill()
		h.req.Close()
		h.resp.Close()
		close(h.release)
		return nil, err
	}
	return h, nil
}

// spawn starts the process from a thread locked for the helper's whole
// life (the parent-death signal fires when the forking thread exits), and
// keeps that thread until Close.
func (h *Helper) spawn(path string, started chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	cmd, err := h.command(path)
	if err == nil {
		err = h.startCommand(cmd)
	}
	started <- err
	if err != nil {
		return
	}
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(h.exited)
	<-h.release
}

func (h *Helper) command(path string) (*exec.Cmd, error) {
	cmd := exec.Command(path,
		strconv.FormatUint(h.opt.WindowBase, 16), strconv.Itoa(ops.VMAWindowPages), strconv.Itoa(ops.VMAHeapPages),
		strconv.Itoa(ops.VMAFilePages), strconv.FormatUint(h.opt.MeasureBase, 16), strconv.Itoa(os.Getpid()),
		strconv.FormatUint(h.opt.THPBase, 16), strconv.Itoa(ops.VMATHPPages))
	cmd.Args[0] = "ipcfuzz-vmahelper"
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

func (h *Helper) startCommand(cmd *exec.Cmd) error {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("vma helper: pipe: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return fmt.Errorf("vma helper: pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW, respR, respW)
		return fmt.Errorf("vma helper: pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4: requestFD, responseFD
	cmd.Stderr = errW
	err = cmd.Start()
	closeAll(reqR, respW, errW)
	if err != nil {
		closeAll(reqW, respR, errR)
		return fmt.Errorf("vma helper: starting %s: %w", cmd.Path, err)
	}
	h.pid, h.proc, h.req, h.resp = cmd.Process.Pid, cmd.Process, reqW, respR
	// Reads block on the thread (Fd puts the pipe in blocking mode): no
	// EAGAIN, no poller and no goroutine hand-off on each answer. The call
	// timeout kills the helper instead (readResponse), which ends the read.
	_ = respR.Fd()
	h.respR = bufio.NewReaderSize(respR, 64<<10)
	h.stderrW.Add(1)
	go func() {
		defer h.stderrW.Done()
		_, _ = io.Copy(h.stderr, io.LimitReader(errR, 4096))
		errR.Close()
	}()
	return nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// watch kills the helper when ctx is done (a call under way then fails).
// It watches whichever process serves: a fork hands the watch on.
func (h *Helper) watch(ctx context.Context) {
	for {
		_, _, exited := h.serving()
		select {
		case <-ctx.Done():
			h.kill()
			h.mu.Lock()
			if h.broken == nil {
				h.broken = fmt.Errorf("vma helper: %w", ctx.Err())
			}
			h.mu.Unlock()
			return
		case <-exited:
			if _, _, now := h.serving(); now == exited {
				return
			}
		}
	}
}

// serving returns the process now serving.
func (h *Helper) serving() (int, *os.Process, chan struct{}) {
	h.pmu.Lock()
	defer h.pmu.Unlock()
	return h.pid, h.proc, h.exited
}

// kill ends the helper at once and waits until it is reaped and its
// stderr read. It is safe after the helper has gone (os.Process never
// signals a reaped pid).
func (h *Helper) kill() {
	_, proc, exited := h.serving()
	_ = proc.Kill()
	<-exited
	h.stderrW.Wait()
}

// adopt makes the forked child (pid, a child of this process by
// CLONE_PARENT) the process serving, once the parent it replaces has been
// reaped (it exits at once; a parent that does not within the call
// timeout is killed).
func (h *Helper) adopt(pid int) error {
	proc, err := os.FindProcess(pid)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("vma helper: the forked child %d: %w", pid, err)
	}
	exited := make(chan struct{})
	go func() {
		_, _ = proc.Wait()
		close(exited)
	}()
	h.pmu.Lock()
	old, oldExited := h.proc, h.exited
	h.pid, h.proc, h.exited = pid, proc, exited
	h.pmu.Unlock()
	select {
	case <-oldExited:
	case <-time.After(h.opt.CallTimeout):
		_ = old.Kill()
		<-oldExited
	}
	return nil
}

// readHello reads the line the helper sends once it is ready, or the line
// it refused with.
func (h *Helper) readHello() error {
	r, err := h.readResponse()
	if err != nil {
		h.kill() // a refusing helper has exited already; a hung one must
		if line := strings.TrimSpace(h.stderr.String()); line != "" {
			return errors.New(firstLine([]byte(line)))
		}
		return fmt.Errorf("vma helper: no hello: %w", err)
	}
	for _, f := range strings.Fields(string(r.payload)) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "start_brk":
			h.startBrk, err = strconv.ParseUint(v, 16, 64)
		case "quirks":
			var q uint64
			q, err = strconv.ParseUint(v, 16, 32)
			h.quirks = ops.VMAQuirks(q)
		case "release":
			h.kernel = v
		}
		if err != nil {
			return fmt.Errorf("vma helper: bad hello %q: %w", r.payload, err)
		}
	}
	if h.startBrk == 0 {
		return fmt.Errorf("vma helper: bad hello %q", r.payload)
	}
	return nil
}

func (h *Helper) readResponse() (r response, err error) {
	var late atomic.Bool
	t := time.AfterFunc(h.opt.CallTimeout, func() { late.Store(true); h.kill() })
	defer func() {
		t.Stop()
		if err != nil && late.Load() {
			err = fmt.Errorf("no answer within %v (the helper was killed): %w", h.opt.CallTimeout, err)
		}
	}()
	var hb [responseSize]byte
	if _, err := io.ReadFull(h.respR, hb[:]); err != nil {
		return response{}, err
	}
	r = decodeResponse(&hb)
	if r.n > 0 {
		r.payload = make([]byte, r.n)
		if _, err := io.ReadFull(h.respR, r.payload); err != nil {
			return r, err
		}
	}
	return r, nil
}

// call sends one request and reads its response. A failure to talk to the
// helper breaks it for good (it is killed).
func (h *Helper) call(q request) (response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.broken != nil {
		return response{}, h.broken
	}
	var b [requestSize]byte
	q.encode(&b)
	var err error
	if q.op == opReset {
		err = h.drainAhead()
	}
	switch {
	case err != nil:
	case len(h.ahead) == 0:
		if h.timing.on {
			t := q
			t.op |= opTimed
			t.encode(&b)
		}
		_, err = h.req.Write(b[:])
	case h.ahead[0] != q:
		err = errors.New("a call other than the one whose request was sent ahead")
	default:
		h.ahead = h.ahead[1:]
	}
	var r response
	if err == nil {
		r, err = h.readResponse()
	}
	if err == nil && h.timing.on {
		h.timing.nanos += r.ns
		h.timing.reads += r.clocks
	}
	if err != nil {
		h.broken = fmt.Errorf("vma helper %d: op %d: %w", h.Pid(), q.op, err)
		h.mu.Unlock()
		h.kill()
		h.mu.Lock()
		return r, h.broken
	}
	if r.err < 0 {
		return r, fmt.Errorf("vma helper %d: op %d: %w", h.Pid(), q.op, refusal(r.err))
	}
	return r, nil
}

// TimeSyscalls turns the timing of the requests sent on or off: while it
// is on, each request sent asks for the helper's CPU time on it, which
// SyscallTime adds up (a request sent ahead by Pipeline is not timed).
func (h *Helper) TimeSyscalls(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timing.on = on
}

// SyscallTime is the helper's CPU time on the requests timed so far, and
// the clock reads that took (system calls of the helper's own).
func (h *Helper) SyscallTime() (nanos, reads int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.timing.nanos, h.timing.reads
}

// errnoCall is call for operations that return an errno only.
func (h *Helper) errnoCall(q request) (ops.Errno, error) {
	r, err := h.call(q)
	if err != nil {
		return 0, err
	}
	return ops.Errno(r.err), nil
}

// Close implements ops.AddressSpace: the helper sees its requests end and
// exits; if it does not within the call timeout it is killed. Closing twice
// is allowed.
func (h *Helper) Close() error {
	h.closeOnce.Do(h.close)
	return nil
}

func (h *Helper) close() {
	h.mu.Lock()
	if h.broken == nil {
		h.broken = errors.New("vma helper: closed")
	}
	h.req.Close()
	h.mu.Unlock()
	_, _, exited := h.serving()
	select {
	case <-exited:
		h.stderrW.Wait()
	case <-time.After(h.opt.CallTimeout):
		h.kill()
	}
	h.resp.Close()
	h.closeSyscalls()
	close(h.release)
}

// Pid is the id of the helper's process now serving (a fork's child after
// a fork).
func (h *Helper) Pid() int {
	pid, _, _ := h.serving()
	return pid
}

// Quirks are the version-dependent rules the helper found by probing.
func (h *Helper) Quirks() ops.VMAQuirks { return h.quirks }

// Release is the kernel release (uname -r).
func (h *Helper) Release() string { return h.kernel }

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}

// maxAhead bounds the requests Pipeline sends at once: 256 of them stay far
// below a pipe's 64 KiB, so that sending never waits for the helper, whose
// answers may meanwhile fill the other pipe until they are read.
const maxAhead = 256

// Pipeline sends the requests of script's operations ahead (and, with
// final, that of the state the snapshot reads after them), up to the first
// operation whose call sends no request of its own (requestOf): the helper
// runs them back to back, with no round trip between two of them, and each
// call then reads its answer only. The calls must come in that order: call
// checks each against the request sent, and one out of order breaks the
// helper (a reset first reads and drops the answers no call read).
func (h *Helper) Pipeline(script []ops.Op, final bool) error {
	var sent []request
	for _, op := range script {
		q, ok := requestOf(op)
		if !ok || len(sent) == maxAhead {
			final = false
			break
		}
		sent = append(sent, q)
	}
	if final && len(sent) < maxAhead {
		sent = append(sent, request{op: opState})
	}
	if len(sent) == 0 {
		return nil
	}
	buf := make([]byte, 0, len(sent)*requestSize)
	for _, q := range sent {
		var b [requestSize]byte
		q.encode(&b)
		buf = append(buf, b[:]...)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.broken != nil:
		return h.broken
	case len(h.ahead) > 0:
		return fmt.Errorf("vma helper %d: %d answers sent ahead are unread", h.Pid(), len(h.ahead))
	}
	if _, err := h.req.Write(buf); err != nil {
		h.broken = fmt.Errorf("vma helper %d: sending %d requests ahead: %w", h.Pid(), len(sent), err)
		return h.broken
	}
	h.ahead = sent
	return nil
}

// drainAhead reads and drops the answers to requests sent ahead that no
// call read (a script that ended early; none is a fork's: requestOf); h.mu
// is held.
func (h *Helper) drainAhead() error {
	for len(h.ahead) > 0 {
		h.ahead = h.ahead[1:]
		if _, err := h.readResponse(); err != nil {
			h.ahead = nil
			return err
		}
	}
	return nil
}
