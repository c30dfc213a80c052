//go:build linux && amd64

package kernel

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Model runs the ids subsystem on the real kernel, in a private IPC namespace
// of its own. It is safe for use by several goroutines; calls are served one
// at a time by the worker thread.
type Model struct {
	mu     sync.Mutex
	t      *thread // nil once Close has run, or after a thread was discarded
	closed bool
}

var _ ops.Model = (*Model)(nil)

// New starts the worker thread and moves it into a private IPC namespace
// before any IPC syscall is made. It fails with one clear line when the
// process may not create an IPC namespace (it needs CAP_SYS_ADMIN).
func New() (ops.Model, error) {
	t, err := startThread()
	if err != nil {
		return nil, err
	}
	return &Model{t: t}, nil
}

// Reset gives the model a fresh IPC namespace: no objects, default limits, no
// pending next_id, every allocator at its start. No options are supported;
// any option is refused by name.
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
	m.t.run(func(t *thread) { err = t.reset() })
	return err
}

// Run is ops.Run(m, cfg, script) done in one hand-over to the worker thread
// instead of one per operation: reset, every operation, the final snapshot.
// It is the fast path for a harness that has whole scripts.
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
	m.t.run(func(t *thread) { out, err = ops.Run(onThread{t}, cfg, script) })
	if m.t.discarded != nil {
		m.t = nil
	}
	return out, err
}

// ensureThread starts a new worker thread (in a new namespace) if the last
// one was discarded.
func (m *Model) ensureThread() error {
	if m.closed {
		return errors.New("kernel: model is closed")
	}
	if m.t != nil {
		return nil
	}
	t, err := startThread()
	if err != nil {
		return err
	}
	m.t = t
	return nil
}

func checkConfig(cfg ops.Config) error {
	for _, k := range slices.Sorted(maps.Keys(cfg.Options)) {
		v := cfg.Options[k]
		if k != ops.OptionCaps || (v != "none" && v != ops.CapSysResource) {
			return fmt.Errorf("kernel: unknown option %s=%s (the kernel takes only %s=none|%s)", k, v, ops.OptionCaps, ops.CapSysResource)
		}
		has, err := hasCapSysResource()
		if err != nil {
			return err
		}
		if has != (v == ops.CapSysResource) {
			return fmt.Errorf("kernel: %s=%s asked, but this process %s CAP_SYS_RESOURCE: the kernel cannot pretend", k, v, map[bool]string{true: "has", false: "lacks"}[has])
		}
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

// reset moves the thread into a new namespace unless nothing ran in the
// current one since it was made.
func (t *thread) reset() error {
	if !t.dirty {
		return nil
	}
	if err := t.endScript(); err != nil {
		return err
	}
	if err := enterNewNamespace(); err != nil {
		return err
	}
	t.nsGen++
	t.dirty = false
	t.nextIDWritten = [len(ops.IPCTypes)]bool{}
	return nil
}

// onThread is the Model seen from the worker thread itself, for Run.
type onThread struct{ t *thread }

func (o onThread) Reset(cfg ops.Config) error { return o.t.reset() }

func (o onThread) Apply(op ops.Op) (ops.Result, error) {
	if o.t.discarded != nil {
		return ops.Result{}, o.t.discarded
	}
	if err := checkOp(op); err != nil {
		return ops.Result{}, err
	}
	return o.t.applyChecked(op)
}

func (o onThread) Snapshot() (ops.Snapshot, error) { return o.t.snapshot() }

func (o onThread) Close() error { return nil }

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
	m.t.run(func(t *thread) { r, err = t.applyChecked(op) })
	if d := m.t.discarded; d != nil {
		m.t = nil
		return r, d
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
	m.t.run(func(t *thread) { s, err = t.snapshot() })
	return s, err
}

// Close stops the worker thread; the thread exits and its namespace, with
// every object in it, goes with it. Close is idempotent.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.t != nil {
		m.t.stop()
		m.t = nil
	}
	return nil
}

func (m *Model) usable() error {
	if m.closed {
		return errors.New("kernel: model is closed")
	}
	if m.t == nil {
		return errors.New("kernel: the worker thread was discarded after a failed credential restore; Reset starts a new one")
	}
	return nil
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

// applyChecked is apply; after an adapter error, which may leave a task
// half-way through a call, every task process is killed (new ones take
// their places at their next use).
func (t *thread) applyChecked(op ops.Op) (ops.Result, error) {
	r, err := t.apply(op)
	if err != nil {
		t.killTasks()
	}
	return r, err
}

// apply runs op on the thread, as op.As when it is not 0, unless op's task
// sleeps in an earlier call (EBUSY, and no syscall; an interrupt is sent
// to the task, not issued by it). Then it settles every pending call:
// those that returned are the result's completions.
func (t *thread) apply(op ops.Op) (ops.Result, error) {
	t.dirty = true
	var r ops.Result
	if op.Kind != ops.KindInterrupt && t.busy(op.Task) {
		r.Err = ops.EBUSY
	} else {
		var err error
		if r, err = t.applyAs(op); err != nil {
			return r, err
		}
	}
	done, err := t.settlePending()
	if err != nil {
		return r, fmt.Errorf("kernel: after %s: %w", ops.FormatOp(op), err)
	}
	r.Done = done
	return r, nil
}

// applyAs runs op on the thread, as op.As when it is not 0.
func (t *thread) applyAs(op ops.Op) (ops.Result, error) {
	if op.As == 0 || op.Task != 0 {
		return t.do(op) // another task switches its own credentials
	}
	if err := t.becomeUser(op.As); err != nil {
		if rerr := t.restoreSelf(); rerr != nil {
			t.discarded = fmt.Errorf("kernel: %v; then could not restore the worker thread, discarded it: %w", err, rerr)
			return ops.Result{}, t.discarded
		}
		return ops.Result{}, fmt.Errorf("kernel: switching to uid %d: %w", op.As, err)
	}
	r, err := t.do(op)
	if rerr := t.restoreSelf(); rerr != nil {
		t.discarded = fmt.Errorf("kernel: after running %s: could not restore the worker thread, discarded it: %w", ops.FormatOp(op), rerr)
		return r, t.discarded
	}
	return r, err
}

// do runs op with the thread's current credentials.
func (t *thread) do(op ops.Op) (ops.Result, error) {
	var r ops.Result
	var e unix.Errno
	var err error
	switch op.Kind {
	case ops.KindGet:
		r.ID, e, err = t.get(op)
	case ops.KindRmid:
		e, err = t.ctl(op, unix.IPC_RMID, nil)
	case ops.KindStat:
		r.Obj, e, err = t.statObject(op)
	case ops.KindChurn:
		r.ID, e, err = t.churn(op)
	case ops.KindShmat, ops.KindShmdt, ops.KindShmctl, ops.KindRmidForced:
		r, e, err = t.doShm(op)
	case ops.KindExit:
		err = t.exitTask(int(op.Task))
	case ops.KindInterrupt:
		err = t.interrupt(int(op.Task))
	case ops.KindSemop, ops.KindSemctl, ops.KindSemLimits:
		r, e, err = t.doSem(op)
	case ops.KindMsgsnd, ops.KindMsgrcv, ops.KindMsgctl:
		r, e, err = t.doMsg(op)
	case ops.KindNextID:
		t.nextIDWritten[op.Type] = true
		e, err = setNextID(op.Type, op.Value)
	case ops.KindLimit:
		e, err = t.setLimit(op.Type, op.Value)
	case ops.KindList:
		var rows []ops.Row
		rows, e, err = t.listing(op.Type)
		if e == 0 && err == nil {
			if op.Rows {
				r.Rows = append(make([]ops.Row, 0, len(rows)), rows...)
			} else {
				r.List = make([]ops.Entry, len(rows))
				for i, o := range rows {
					r.List[i] = ops.Entry{ID: o.ID, Key: o.Key}
				}
			}
		}
	}
	if err != nil {
		return ops.Result{}, fmt.Errorf("kernel: %s: %w", ops.FormatOp(op), err)
	}
	if e != 0 {
		return ops.Result{Err: ops.Errno(e)}, nil
	}
	return r, nil
}

func (t *thread) snapshot() (ops.Snapshot, error) {
	return t.snapshotReading(t.nextIDWritten)
}

// snapshotReading takes a snapshot, reading <type>_next_id where read[type]
// is set and taking the -1 of a new namespace elsewhere.
func (t *thread) snapshotReading(read [len(ops.IPCTypes)]bool) (ops.Snapshot, error) {
	var s ops.Snapshot
	for _, typ := range ops.IPCTypes {
		rows, e, err := t.listing(typ)
		if err == nil && e != 0 {
			err = e
		}
		if err != nil {
			return s, fmt.Errorf("kernel: snapshot: reading /proc/sysvipc/%s: %w", typ, err)
		}
		var objs []ops.Object
		for _, r := range rows {
			objs = append(objs, r.Object(typ))
		}
		if len(rows) > 0 {
			s.Rows[typ] = rows
		}
		next := int64(-1)
		if read[typ] {
			if next, err = t.readInt("/proc/sys/kernel/" + typ.String() + "_next_id"); err != nil {
				return s, fmt.Errorf("kernel: snapshot: %w", err)
			}
		}
		limit, e := ipcLimit(typ)
		if e != 0 {
			return s, fmt.Errorf("kernel: snapshot: %s IPC_INFO: %w", typ, e)
		}
		s.IDs[typ] = ops.TypeState{Objects: objs, NextID: next, Limit: limit}
	}
	var err error
	if s.Queues, err = t.queues(s.Rows[ops.Msg]); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.Shm, err = t.shmSnapshot(); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.Sems, err = t.semArrays(s.Rows[ops.Sem]); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.SemLimits, err = semLimitsNow(); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	return s, nil
}

// shmSnapshot reads shm_tot (SHM_INFO), the live attachments (the tasks'
// maps) and, if it was written since the last Reset, shm_rmid_forced (0 in
// a new namespace). The sysctl is read last: a read of 1 destroys orphaned
// segments nobody has attached, which the listing must not have hidden.
func (t *thread) shmSnapshot() (ops.ShmState, error) {
	var st ops.ShmState
	var buf statBuf
	if e := ipcCtl(ops.Shm, 0, shmInfoCmd, &buf); e != 0 {
		return st, fmt.Errorf("SHM_INFO: %w", e)
	}
	st.Tot = (*[2]int64)(unsafe.Pointer(&buf.ds))[1]
	var err error
	if st.Attachments, err = t.shmAttachments(); err != nil {
		return st, err
	}
	if t.forcedWritten {
		if st.RmidForced, err = t.readInt("/proc/sys/kernel/shm_rmid_forced"); err != nil {
			return st, err
		}
	}
	return st, nil
}
