//go:build linux && amd64

package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Model runs the ids, shm, msg and sem subsystems on the real kernel, in a
// private IPC namespace of its own. It is safe for use by several
// goroutines; calls are served one at a time by the worker thread.
type Model struct {
	mu       sync.Mutex
	n        *ns // nil once Close has run, or after its thread was discarded
	closed   bool
	replaced int // worker threads replaced after a reset failed (Replaced)
}

var _ ops.Model = (*Model)(nil)

// New starts the worker thread and moves it into a private IPC namespace
// before any IPC syscall is made. It fails with one clear line when the
// process may not create an IPC namespace (it needs CAP_SYS_ADMIN).
func New() (ops.Model, error) {
	n, err := startNS()
	if err != nil {
		return nil, err
	}
	return &Model{n: n}, nil
}

// Reset gives the model a fresh IPC namespace: no objects, default limits, no
// pending next_id, every allocator at its start. The only option is caps=,
// which must say what the process has.
func (m *Model) Reset(cfg ops.Config) error {
	if err := checkConfig(cfg); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureThread(); err != nil {
		return err
	}
	var err error
	m.n.w.Run(func() { err = m.n.reset() })
	if err != nil {
		return m.replace(err)
	}
	return nil
}

// replace discards the worker thread whose reset could not undo what the
// last script left (why), its namespace and its task processes with it,
// and starts a fresh one: a kernel that does something unexpected (a
// shmat that reports an address shmdt then refuses) is the finding of the
// script that made it do so, never a failure of the side. It fails only
// when no fresh thread can start.
func (m *Model) replace(why error) error {
	m.n.w.Stop()
	m.n = nil
	m.replaced++
	if err := m.ensureThread(); err != nil {
		return fmt.Errorf("kernel: a new worker after a reset that could not undo the last script (%v): %w", why, err)
	}
	return nil
}

// Replaced counts the worker threads (and namespaces) discarded because a
// reset could not undo what the script before it left.
func (m *Model) Replaced() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replaced
}

// Run is ops.Run(m, cfg, script) done in one hand-over to the worker thread
// instead of one per operation: reset, every operation, the final snapshot.
// It is the fast path for a harness that has whole scripts. With
// cfg.Observe.Cover, each operation's Observation holds the kernel program
// counters the worker thread's syscalls and the task processes' calls
// reached (KCOV, where the kernel has it: cover.go).
func (m *Model) Run(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	if err := checkConfig(cfg); err != nil {
		return ops.Outcome{}, fmt.Errorf("reset: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureThread(); err != nil {
		return ops.Outcome{}, fmt.Errorf("reset: %w", err)
	}
	var out ops.Outcome
	var err error
	m.n.w.Run(func() { out, err = m.n.runCovered(cfg, script) })
	var ne *notUndoneError
	if errors.As(err, &ne) {
		// The reset before the script could not undo the last one: a
		// fresh thread (and namespace) runs it instead.
		if err := m.replace(ne.err); err != nil {
			return ops.Outcome{}, fmt.Errorf("reset: %w", err)
		}
		m.n.w.Run(func() { out, err = m.n.runCovered(cfg, script) })
	}
	if m.n.w.Discarded() != nil {
		m.n = nil
	}
	return out, err
}

// notUndoneError is a reset, run on the worker thread within a script's
// run, that could not undo what the last script left: the thread is to be
// replaced (Model.replace) and the script run again on the new one.
type notUndoneError struct{ err error }

func (e *notUndoneError) Error() string { return e.err.Error() }
func (e *notUndoneError) Unwrap() error { return e.err }

// Apply runs one operation on the kernel. An errno the kernel returns is the
// result; an error means the adapter itself failed. An op with As != 0 runs
// with the worker thread's egid and euid set to As and no supplementary
// groups; the thread switches back before the next op, or is discarded (and
// the next Reset starts a new one) if it cannot.
func (m *Model) Apply(op ops.Op) (ops.Result, error) {
	if err := checkOp(op); err != nil {
		return ops.Result{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return ops.Result{}, err
	}
	var r ops.Result
	var err error
	m.n.w.Run(func() { r, err = m.n.applyChecked(op) })
	if m.n.w.Discarded() != nil {
		m.n = nil
	}
	return r, err
}

// Snapshot reads the whole observable state: every object from
// /proc/sysvipc/<type> (parsed by its header's column names), each type's
// pending <type>_next_id and its object limit. The limits come from
// IPC_INFO, which reports the same namespace fields the msgmni, semmni and
// shmmni sysctls hold, at a fraction of the cost of the sysctl files. A
// <type>_next_id file is read only if it was written since the last Reset;
// until then it holds the -1 of a new namespace (the tests check both
// shortcuts against the files).
func (m *Model) Snapshot() (ops.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s ops.Snapshot
	if err := m.usable(); err != nil {
		return s, err
	}
	var err error
	m.n.w.Run(func() { s, err = m.n.snapshot() })
	return s, err
}

// Measure implements ops.Measurer: the workload runs on the worker thread in
// a fresh private namespace whose limits it raises (only there). Setup and
// one warm-up repetition are not timed. The kernel counts nothing for us:
// Counters is empty, but for msg-full-queue, whose sleeping senders' context
// switches are read from /proc (fullQueue).
func (m *Model) Measure(cfg ops.Config, w ops.Workload, size, reps int) (ops.Measurement, error) {
	if err := checkConfig(cfg); err != nil {
		return ops.Measurement{}, err
	}
	if err := ops.CheckMeasure(w, size, reps); err != nil {
		return ops.Measurement{}, err
	}
	if ops.IsPattern(w) {
		// A pattern runs through the adapter's own operations (each
		// Reset a fresh namespace): its wall time includes the adapter's
		// work per operation, which the intervals of the fit carry.
		p, err := ops.PatternOf(w)
		if err != nil {
			return ops.Measurement{}, err
		}
		return ops.MeasurePattern(m, cfg, p, size, reps)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureThread(); err != nil {
		return ops.Measurement{}, err
	}
	var res ops.Measurement
	var err error
	m.n.w.Run(func() { res, err = m.n.measure(w, size, reps) })
	return res, err
}

// Close stops the worker thread; the thread exits and its namespace, with
// every object in it, goes with it. Close is idempotent.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.n != nil {
		m.n.w.Stop()
		m.n = nil
	}
	return nil
}

// ensureThread starts a new worker thread (in a new namespace) if the last
// one was discarded.
func (m *Model) ensureThread() error {
	if m.closed {
		return errors.New("kernel: model is closed")
	}
	if m.n != nil {
		return nil
	}
	n, err := startNS()
	if err != nil {
		return err
	}
	m.n = n
	return nil
}

func (m *Model) usable() error {
	if m.closed {
		return errors.New("kernel: model is closed")
	}
	if m.n == nil {
		return errors.New("kernel: the worker thread was discarded after a failed credential restore; Reset starts a new one")
	}
	return nil
}

// onThread is the Model seen from the worker thread itself, for Run.
type onThread struct{ n *ns }

func (o onThread) Reset(ops.Config) error {
	if err := o.n.reset(); err != nil {
		return &notUndoneError{err}
	}
	return nil
}

func (o onThread) Apply(op ops.Op) (ops.Result, error) {
	if d := o.n.w.Discarded(); d != nil {
		return ops.Result{}, d
	}
	if err := checkOp(op); err != nil {
		return ops.Result{}, err
	}
	return o.n.applyChecked(op)
}

func (o onThread) Snapshot() (ops.Snapshot, error) { return o.n.snapshot() }

func (o onThread) Close() error { return nil }

func checkConfig(cfg ops.Config) error {
	if _, err := Options.Parse(cfg.Options); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	v, asked := cfg.Options[ops.OptionCaps]
	if !asked {
		return nil // the default: what the process has
	}
	has, err := hasCapSysResource()
	if err != nil {
		return err
	}
	if has != (v == ops.CapSysResource) {
		return fmt.Errorf("kernel: %s=%s asked, but this process %s CAP_SYS_RESOURCE: the kernel cannot pretend", ops.OptionCaps, v, map[bool]string{true: "has", false: "lacks"}[has])
	}
	return nil
}

// hasCapSysResource reports whether this process has CAP_SYS_RESOURCE in
// its effective set.
func hasCapSysResource() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("kernel: reading capabilities: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("kernel: CapEff %q: %w", v, err)
			}
			return eff&(1<<unix.CAP_SYS_RESOURCE) != 0, nil
		}
	}
	return false, fmt.Errorf("kernel: no CapEff in /proc/self/status")
}

func checkOp(op ops.Op) error {
	if err := ops.Validate(op); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if op.Obj.Handle != 0 {
		return fmt.Errorf("kernel: unresolved handle h%d (the caller resolves handles)", op.Obj.Handle)
	}
	return nil
}
