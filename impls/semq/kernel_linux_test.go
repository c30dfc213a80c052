//go:build linux && amd64

package semq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The kernel check. Every syscall on a semaphore array runs inside a
// private IPC namespace: the rig's worker goroutine locks itself to its
// thread, unshares CLONE_NEWIPC, and never unlocks, so the thread (and the
// namespace, once the task processes are gone) ends with the goroutine.
// Tasks are child processes (this test binary, started by the worker, so in
// its namespace; each checks that it is) that run semop and semctl on
// request. A task asleep in semop is detected by GETNCNT/GETZCNT, which
// count a waiter exactly from the moment it is queued (kernel-probe §3).
// Every task has the parent-death signal SIGKILL, bound to the worker
// thread, so no task outlives the rig, even if the test dies.

const (
	kTaskEnv = "IPCFUZZ_SEMQ_KERNEL_TASK" // set in task processes: the namespace they must be in
	kWait    = 10 * time.Second           // how long a task may take to show a result

	ipcNowait = 0o4000
	semUndo   = 0x1000
	ipcRmid   = 0
	ipcStat   = 2
	getPid    = 11
	getAll    = 13
	getNcnt   = 14
	getZcnt   = 15
	setVal    = 16
	setAll    = 17
)

// Requests to a task process and its answers.
const (
	kSemop uint64 = iota + 1
	kSetVal
	kSetAll
	kPing
)

type kreq struct {
	Kind   uint64
	Semid  uint64
	Nsops  uint64
	Sops   [8]sembuf
	Semnum uint64
	Val    uint64
	Vals   [8]uint16
}

type sembuf struct {
	Num uint16
	Op  int16
	Flg int16
}

type kresp struct {
	Kind  uint64 // the request's, or 0 for the greeting
	Errno uint64
	Pid   uint64
	Tid   uint64
}

func init() {
	ns, ok := os.LookupEnv(kTaskEnv)
	if !ok {
		return
	}
	runtime.LockOSThread()
	if err := serveKernelTask(ns); err != nil {
		fmt.Fprintf(os.Stderr, "semq kernel task %d: %v\n", os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// serveKernelTask is a task process: it runs requests until its request
// pipe closes, which is its exit.
func serveKernelTask(wantNS string) error {
	ns, err := os.Readlink("/proc/thread-self/ns/ipc")
	if err != nil {
		return fmt.Errorf("reading my IPC namespace: %w", err)
	}
	if ns != wantNS {
		return fmt.Errorf("in IPC namespace %s, not the rig's %s: refusing to run", ns, wantNS)
	}
	// SIGUSR1 is the test's signal: make sure the runtime handles it
	// (interrupting semop) rather than ignoring it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGUSR1)
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "responses")
	hello := kresp{Pid: uint64(os.Getpid()), Tid: uint64(syscall.Gettid())}
	if err := binary.Write(out, binary.NativeEndian, &hello); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	for {
		var req kreq
		if err := binary.Read(in, binary.NativeEndian, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		resp := kresp{Kind: req.Kind, Errno: uint64(runKernelReq(&req))}
		if err := binary.Write(out, binary.NativeEndian, &resp); err != nil {
			return fmt.Errorf("writing a response: %w", err)
		}
	}
}

// runKernelReq runs one request with every signal but SIGUSR1 blocked, so
// that only the test's signal can interrupt a sleeping semop (the Go
// runtime signals its threads too).
func runKernelReq(req *kreq) syscall.Errno {
	if req.Kind == kPing {
		return 0
	}
	mask, old := ^uint64(0)&^(1<<(syscall.SIGUSR1-1)), uint64(0)
	const sigSetmask = 2
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&mask)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return e
	}
	defer syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	var e syscall.Errno
	switch req.Kind {
	case kSemop:
		_, _, e = syscall.Syscall(syscall.SYS_SEMOP, uintptr(req.Semid), uintptr(unsafe.Pointer(&req.Sops[0])), uintptr(req.Nsops))
	case kSetVal:
		_, _, e = syscall.Syscall6(syscall.SYS_SEMCTL, uintptr(req.Semid), uintptr(req.Semnum), setVal, uintptr(req.Val), 0, 0)
	case kSetAll:
		_, _, e = syscall.Syscall6(syscall.SYS_SEMCTL, uintptr(req.Semid), 0, setAll, uintptr(unsafe.Pointer(&req.Vals[0])), 0, 0)
	}
	runtime.KeepAlive(req)
	return e
}

// worker is the goroutine locked to the thread in the private namespace.
type worker struct {
	calls chan func()
	ns    string
}

func startWorker() (*worker, error) {
	w := &worker{calls: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		host, err := os.Readlink("/proc/thread-self/ns/ipc")
		if err != nil {
			ready <- fmt.Errorf("reading the IPC namespace: %w", err)
			return
		}
		if err := syscall.Unshare(syscall.CLONE_NEWIPC); err != nil {
			ready <- fmt.Errorf("unshare(CLONE_NEWIPC): %w", err)
			return
		}
		if w.ns, err = os.Readlink("/proc/thread-self/ns/ipc"); err != nil || w.ns == host {
			ready <- fmt.Errorf("no private IPC namespace after unshare (%s): %v", w.ns, err)
			return
		}
		ready <- nil
		for f := range w.calls {
			f()
		}
	}()
	return w, <-ready
}

// do runs f on the worker thread.
func (w *worker) do(f func()) {
	done := make(chan struct{})
	w.calls <- func() { f(); close(done) }
	<-done
}

// sys runs a syscall on the worker thread.
func (w *worker) sys(nr uintptr, args ...uintptr) (r uintptr, e syscall.Errno) {
	var a [6]uintptr
	copy(a[:], args)
	w.do(func() { r, _, e = syscall.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
	return r, e
}

// ktask is a task process.
type ktask struct {
	cmd  *exec.Cmd
	req  *os.File
	resp chan kresp
	pid  int
	tid  int
}

func (p *ktask) send(r *kreq) error {
	if err := binary.Write(p.req, binary.NativeEndian, r); err != nil {
		return fmt.Errorf("task %d: sending a request: %w", p.pid, err)
	}
	return nil
}

// recv waits for the task's next answer.
func (p *ktask) recv() (kresp, error) {
	select {
	case r, ok := <-p.resp:
		if !ok {
			return r, fmt.Errorf("task %d: its responses ended", p.pid)
		}
		return r, nil
	case <-time.After(kWait):
		return kresp{}, fmt.Errorf("task %d: no answer within %v", p.pid, kWait)
	}
}

// poll returns the task's next answer if there is one.
func (p *ktask) poll() (kresp, bool) {
	select {
	case r, ok := <-p.resp:
		return r, ok
	default:
		return kresp{}, false
	}
}

// kernelRig is the worker and the task processes, shared by the arrays of
// one test.
type kernelRig struct {
	w     *worker
	tasks [ops.NumTasks]*ktask
	gen   [ops.NumTasks]int
	pids  map[int]ops.PID // kernel pid -> task identity
}

// newKernelRig starts the rig, or skips the test with the reason it
// cannot run here.
func newKernelRig(t *testing.T) *kernelRig {
	if os.Geteuid() != 0 {
		t.Skip("kernel check skipped: needs root (CAP_SYS_ADMIN) for a private IPC namespace")
	}
	w, err := startWorker()
	if err != nil {
		t.Skipf("kernel check skipped: no private IPC namespace: %v", err)
	}
	rig := &kernelRig{w: w, pids: map[int]ops.PID{}}
	t.Cleanup(rig.close)
	for task := range rig.tasks {
		if err := rig.spawn(task); err != nil {
			t.Fatal(err)
		}
	}
	return rig
}

// spawn starts the process of task (its next incarnation).
func (rig *kernelRig) spawn(task int) error {
	var p *ktask
	var err error
	rig.w.do(func() { p, err = startKernelTask(rig.w.ns, task) })
	if err != nil {
		return err
	}
	hello, err := p.recv()
	if err != nil {
		p.kill()
		return err
	}
	p.tid = int(hello.Tid)
	rig.tasks[task] = p
	rig.pids[p.pid] = ops.TaskPID(task, rig.gen[task])
	return nil
}

// startKernelTask starts a task process; it must run on the worker thread.
func startKernelTask(ns string, task int) (*ktask, error) {
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
	cmd.Args = []string{fmt.Sprintf("semq-kernel-task-t%d", task)}
	cmd.Env = []string{kTaskEnv + "=" + ns}
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, fmt.Errorf("starting task t%d: %w", task, err)
	}
	p := &ktask{cmd: cmd, req: reqW, resp: make(chan kresp, 16), pid: cmd.Process.Pid}
	go func() {
		defer close(p.resp)
		defer respR.Close()
		for {
			var r kresp
			if binary.Read(respR, binary.NativeEndian, &r) != nil {
				return
			}
			p.resp <- r
		}
	}()
	return p, nil
}

// exit ends a task process the way it exits on its own (exit_sem runs),
// and returns once it is reaped.
func (p *ktask) exit() error {
	p.req.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("task %d: %w", p.pid, err)
	}
	return nil
}

func (p *ktask) kill() {
	_ = p.cmd.Process.Kill()
	p.req.Close()
	_ = p.cmd.Wait()
}

func (rig *kernelRig) close() {
	for _, p := range rig.tasks {
		if p != nil {
			p.kill()
		}
	}
	close(rig.w.calls)
}

// tb is what a kernelRunner reports failures to: *testing.T or *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// kernelRunner runs a script on a kernel semaphore array and checks every
// step against a model (PerSemaphore): the caller's result, then the
// values, sempids, counts and otime at once, then the answers of the
// sleepers the model says were completed. It returns what the kernel did.
type kernelRunner struct {
	t       tb
	rig     *kernelRig
	semid   int
	nsems   int
	model   *modelRunner
	waiting map[int]bool // tasks asleep in semop
	removed bool
	closed  bool
	log     []string
}

func (rig *kernelRig) newArray(t tb, nsems int) *kernelRunner {
	t.Helper()
	id, e := rig.w.sys(syscall.SYS_SEMGET, 0, uintptr(nsems), 0o600)
	if e != 0 {
		t.Fatalf("semget(IPC_PRIVATE, %d): %v", nsems, e)
	}
	m := newModelRunner(nsems, Options{Structure: PerSemaphore})
	m.gen = rig.gen
	return &kernelRunner{t: t, rig: rig, semid: int(id), nsems: nsems, model: m, waiting: map[int]bool{}}
}

func (k *kernelRunner) fail(format string, args ...any) {
	k.t.Helper()
	k.t.Fatalf("kernel: %s\nscript:\n%s", fmt.Sprintf(format, args...), strings.Join(k.log, "\n"))
}

func (k *kernelRunner) pid(task int) ops.PID { return ops.TaskPID(task, k.rig.gen[task]) }

func (k *kernelRunner) task(task int) *ktask { return k.rig.tasks[task] }

func (k *kernelRunner) semop(task int, sops ...Sop) result {
	k.t.Helper()
	want := k.model.semop(task, sops...)
	k.log = append(k.log, fmt.Sprintf("t%d semop %v -> model: %v", task, sops, want))
	req := kreq{Kind: kSemop, Semid: uint64(k.semid), Nsops: uint64(len(sops))}
	for i, o := range sops {
		req.Sops[i] = sembuf{Num: uint16(o.Num), Op: int16(o.Op), Flg: flags(o)}
	}
	return k.call(task, &req, want)
}

func flags(o Sop) int16 {
	var f int16
	if o.NoWait {
		f |= ipcNowait
	}
	if o.Undo {
		f |= semUndo
	}
	return f
}

func (k *kernelRunner) setval(task, n, v int) []Completion {
	k.t.Helper()
	want := result{Done: k.model.setval(task, n, v)}
	k.log = append(k.log, fmt.Sprintf("t%d setval s%d=%d -> model: %v", task, n, v, want))
	return k.call(task, &kreq{Kind: kSetVal, Semid: uint64(k.semid), Semnum: uint64(n), Val: uint64(v)}, want).Done
}

func (k *kernelRunner) setall(task int, vs ...int) []Completion {
	k.t.Helper()
	want := result{Done: k.model.setall(task, vs...)}
	k.log = append(k.log, fmt.Sprintf("t%d setall %v -> model: %v", task, vs, want))
	req := kreq{Kind: kSetAll, Semid: uint64(k.semid)}
	for i, v := range vs {
		req.Vals[i] = uint16(v)
	}
	return k.call(task, &req, want).Done
}

func (k *kernelRunner) ensureUndo(task int) {
	k.t.Helper()
	k.model.ensureUndo(task)
	k.log = append(k.log, fmt.Sprintf("t%d semop {s%d+0/undo} -> model: EFBIG", task, k.nsems))
	req := kreq{Kind: kSemop, Semid: uint64(k.semid), Nsops: 1}
	req.Sops[0] = sembuf{Num: uint16(k.nsems), Flg: semUndo}
	k.call(task, &req, result{Err: efbig})
}

// call has an idle task run a request and checks the outcome against want.
func (k *kernelRunner) call(task int, req *kreq, want result) result {
	k.t.Helper()
	if k.waiting[task] {
		k.fail("t%d is asleep: the script cannot use it", task)
	}
	p := k.task(task)
	if err := p.send(req); err != nil {
		k.fail("%v", err)
	}
	if want.Blocked {
		k.awaitSleep(task)
		k.waiting[task] = true
		k.compareState()
		return want
	}
	resp, err := p.recv()
	if err != nil {
		k.fail("%v", err)
	}
	got := result{Err: ops.Errno(resp.Errno)}
	if got.Err != want.Err {
		k.fail("t%d got %v, the model says %v", task, got.Err, want.Err)
	}
	k.compareState()
	got.Done = k.collect(want.Done)
	return got
}

// awaitSleep waits until the kernel's GETNCNT/GETZCNT equal the model's
// (the task is queued) or the task answers (it did not sleep).
func (k *kernelRunner) awaitSleep(task int) {
	k.t.Helper()
	want := k.model.observe()
	deadline := time.Now().Add(kWait)
	for {
		if r, ok := k.task(task).poll(); ok {
			k.fail("t%d returned %v, the model says it sleeps", task, syscall.Errno(r.Errno))
		}
		o := k.observe()
		if slices.Equal(o.Ncnt, want.Ncnt) && slices.Equal(o.Zcnt, want.Zcnt) {
			return
		}
		if time.Now().After(deadline) {
			k.fail("t%d: counts ncnt %v zcnt %v, the model's %v %v", task, o.Ncnt, o.Zcnt, want.Ncnt, want.Zcnt)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// collect waits for the answers of the sleepers the model completed and
// returns them in task order.
func (k *kernelRunner) collect(want []Completion) []Completion {
	k.t.Helper()
	var got []Completion
	for _, c := range want {
		if !k.waiting[c.Task] {
			k.fail("the model completes t%d, which is not asleep", c.Task)
		}
		r, err := k.task(c.Task).recv()
		if err != nil {
			k.fail("waiting for t%d (the model says %v): %v", c.Task, c.Err, err)
		}
		delete(k.waiting, c.Task)
		got = append(got, Completion{Task: c.Task, Err: ops.Errno(r.Errno)})
	}
	for task := range k.waiting {
		if r, ok := k.task(task).poll(); ok {
			k.fail("t%d returned %v, the model says it still sleeps", task, syscall.Errno(r.Errno))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		k.fail("sleepers returned %v, the model says %v", got, want)
	}
	return got
}

func (k *kernelRunner) exit(task int) []Completion {
	k.t.Helper()
	if k.waiting[task] {
		k.fail("t%d is asleep: it cannot exit", task)
	}
	want := k.model.exit(task)
	k.log = append(k.log, fmt.Sprintf("t%d exit -> model: %v", task, result{Done: want}))
	if err := k.task(task).exit(); err != nil {
		k.fail("%v", err)
	}
	k.rig.gen[task]++
	if err := k.rig.spawn(task); err != nil {
		k.fail("%v", err)
	}
	k.compareState()
	return k.collect(want)
}

func (k *kernelRunner) interrupt(task int) Completion {
	k.t.Helper()
	want := k.model.interrupt(task)
	k.log = append(k.log, fmt.Sprintf("t%d signal -> model: %v", task, want))
	if !k.waiting[task] {
		k.fail("t%d is not asleep: nothing to interrupt", task)
	}
	p := k.task(task)
	if err := syscall.Tgkill(p.pid, p.tid, syscall.SIGUSR1); err != nil {
		k.fail("tgkill t%d: %v", task, err)
	}
	r, err := p.recv()
	if err != nil {
		k.fail("%v", err)
	}
	delete(k.waiting, task)
	got := Completion{Task: task, Err: ops.Errno(r.Errno)}
	if got != want {
		k.fail("t%d returned %v after a signal, the model says %v", task, got.Err, want.Err)
	}
	k.compareState()
	return got
}

func (k *kernelRunner) rmid() []Completion {
	k.t.Helper()
	want := k.model.rmid()
	k.log = append(k.log, fmt.Sprintf("rmid -> model: %v", result{Done: want}))
	if _, e := k.rig.w.sys(syscall.SYS_SEMCTL, uintptr(k.semid), 0, ipcRmid); e != 0 {
		k.fail("IPC_RMID: %v", e)
	}
	k.removed = true
	return k.collect(want)
}

// observe reads the array with semctl: GETALL, GETPID, GETNCNT, GETZCNT
// and IPC_STAT's sem_otime.
func (k *kernelRunner) observe() observation {
	k.t.Helper()
	o := observation{}
	var errs []error
	k.rig.w.do(func() {
		semctl := func(n, cmd int, arg uintptr) int {
			r, _, e := syscall.Syscall6(syscall.SYS_SEMCTL, uintptr(k.semid), uintptr(n), uintptr(cmd), arg, 0, 0)
			if e != 0 {
				errs = append(errs, fmt.Errorf("semctl(%d, %d, %d): %w", k.semid, n, cmd, e))
			}
			return int(r)
		}
		vals := make([]uint16, k.nsems)
		semctl(0, getAll, uintptr(unsafe.Pointer(&vals[0])))
		for n := range k.nsems {
			o.Vals = append(o.Vals, int(vals[n]))
			o.Pids = append(o.Pids, k.taskPID(semctl(n, getPid, 0)))
			o.Ncnt = append(o.Ncnt, semctl(n, getNcnt, 0))
			o.Zcnt = append(o.Zcnt, semctl(n, getZcnt, 0))
		}
		var ds [16]uint64 // struct semid64_ds on x86-64
		semctl(0, ipcStat, uintptr(unsafe.Pointer(&ds[0])))
		o.Otime = ds[6] != 0
		if ds[10] != uint64(k.nsems) {
			errs = append(errs, fmt.Errorf("IPC_STAT: sem_nsems %d, want %d (layout?)", ds[10], k.nsems))
		}
	})
	if len(errs) > 0 {
		k.fail("%v", errors.Join(errs...))
	}
	for task := range k.waiting {
		o.Pending = append(o.Pending, task)
	}
	slices.Sort(o.Pending)
	return o
}

// taskPID turns a kernel pid into a task identity (0 stays 0).
func (k *kernelRunner) taskPID(pid int) ops.PID {
	if pid == 0 {
		return 0
	}
	if p, ok := k.rig.pids[pid]; ok {
		return p
	}
	return ops.PIDUnknown
}

// compareState compares what semctl shows; which tasks sleep is checked
// by awaitSleep and collect.
func (k *kernelRunner) compareState() {
	k.t.Helper()
	o, m := k.observe(), k.model.observe()
	o.Pending, m.Pending = nil, nil
	got, want := fmt.Sprintf("%+v", o), fmt.Sprintf("%+v", m)
	if got != want {
		k.fail("state differs:\nkernel: %s\nmodel:  %s", got, want)
	}
}

// finish ends a script that went well: IPC_RMID (checked), then every
// task must answer a ping before anything else.
func (k *kernelRunner) finish() {
	k.t.Helper()
	if !k.removed {
		k.rmid()
	}
	for task, p := range k.rig.tasks {
		if err := p.send(&kreq{Kind: kPing}); err != nil {
			k.fail("%v", err)
		}
		r, err := p.recv()
		if err != nil {
			k.fail("%v", err)
		}
		if r.Kind != kPing {
			k.fail("t%d returned %v that nobody expected", task, syscall.Errno(r.Errno))
		}
	}
	k.closed = true
}

// close resets the rig after a script that failed: the array goes, and
// every task answers whatever it had pending, then a ping; a task that
// does not is replaced.
func (k *kernelRunner) close() {
	if k.closed {
		return
	}
	k.closed = true
	if !k.removed {
		k.rig.w.sys(syscall.SYS_SEMCTL, uintptr(k.semid), 0, ipcRmid)
	}
	for task, p := range k.rig.tasks {
		ok := p.send(&kreq{Kind: kPing}) == nil
		for ok {
			r, err := p.recv()
			if err != nil {
				ok = false
			} else if r.Kind == kPing {
				break
			}
		}
		if !ok {
			p.kill()
			k.rig.gen[task]++
			_ = k.rig.spawn(task)
		}
	}
}

// TestKernelScenarios runs every named scenario on the kernel, each step
// also checked against the model.
func TestKernelScenarios(t *testing.T) {
	rig := newKernelRig(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			k := rig.newArray(t, sc.nsems)
			defer k.close()
			sc.run(t, k)
			k.finish()
		})
	}
}

// TestKernelAgreesWithModel runs random scripts on the kernel and on the
// model (PerSemaphore) and compares every step.
func TestKernelAgreesWithModel(t *testing.T) {
	rig := newKernelRig(t)
	rapid.Check(t, func(t *rapid.T) {
		nsems := drawNsems(t)
		k := rig.newArray(t, nsems)
		defer k.close()
		n := rapid.IntRange(1, 40).Draw(t, "steps")
		for range n {
			st := drawStep(t, nsems, k.observe().Pending, true)
			apply(k, st)
			if st.kind == stepRmid {
				break
			}
		}
		k.finish()
	})
}
