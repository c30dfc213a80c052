//go:build linux && amd64

package kernel

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Measure implements ops.Measurer: the workload runs on the worker thread in
// a fresh private namespace whose limits it raises (only there). Setup and
// one warm-up repetition are not timed. The kernel counts nothing for us, so
// Counters is empty.
func (m *Model) Measure(cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	if err := checkConfig(cfg); err != nil {
		return ops.Measurement{}, err
	}
	if err := ops.CheckMeasure(w, n, reps); err != nil {
		return ops.Measurement{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureThread(); err != nil {
		return ops.Measurement{}, err
	}
	var res ops.Measurement
	var err error
	m.t.run(func(t *thread) { res, err = t.measure(w, n, reps) })
	return res, err
}

func (t *thread) measure(w ops.Workload, n, reps int) (ops.Measurement, error) {
	t.dirty = true
	if err := t.reset(); err != nil {
		return ops.Measurement{}, err
	}
	t.dirty = true
	var part func() error
	var err error
	// The measured parts are direct syscalls on the worker thread: through
	// Apply, the adapter's own work per operation (a few microseconds)
	// would swamp what is measured (a lookup's nanoseconds).
	var teardown func()
	switch w {
	case ops.MsgFullQueue:
		part, teardown, err = t.fullQueue(n)
	case ops.MsgPingPong:
		part, teardown, err = t.pingPong(n)
	case ops.SemSleepers:
		part, teardown, err = t.semSleepers(n, ops.SemRounds)
	case ops.SemopDepth:
		part, err = t.semopDepth(n, ops.LookupRounds)
	default:
		part, err = t.setupWorkload(w, n)
	}
	if teardown != nil {
		defer teardown() // IPC_RMID: the sleepers return EIDRM and their threads end
	}
	if err != nil {
		return ops.Measurement{}, fmt.Errorf("kernel: %s setup at n=%d: %w", w, n, err)
	}
	if err := part(); err != nil { // warm-up
		return ops.Measurement{}, err
	}
	res := ops.Measurement{WallNs: make([]int64, reps), Counters: map[string]int64{}}
	for i := range reps {
		start := time.Now()
		err := part()
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if err != nil {
			return ops.Measurement{}, fmt.Errorf("kernel: %s at n=%d: %w", w, n, err)
		}
	}
	return res, nil
}

// setupWorkload builds the state of a workload with real syscalls and returns
// the measured part.
func (t *thread) setupWorkload(w ops.Workload, n int) (func() error, error) {
	typ := ops.Msg
	switch w {
	case ops.ProcReadShm:
		typ = ops.Shm
	case ops.ProcReadSem:
		typ = ops.Sem
	}
	if e, err := t.setLimit(typ, ops.IPCMNI); err != nil || e != 0 {
		return nil, fmt.Errorf("raising the %s limit in the private namespace: %v %v", typ, e, err)
	}
	create := func() (int64, error) {
		op := ops.Op{Kind: ops.KindGet, Type: typ, Key: ops.IPCPrivate, Mode: 0600, Size: 1}
		if typ == ops.Shm {
			op.Size = 4096
		}
		id, e := ipcGet(op)
		if e != 0 {
			return 0, fmt.Errorf("create %s: %v", typ, e)
		}
		return id, nil
	}
	rmid := func(id int64) error {
		if e := ipcCtl(typ, id, unix.IPC_RMID, nil); e != 0 {
			return fmt.Errorf("rmid %s %d: %v", typ, id, e)
		}
		return nil
	}
	if w == ops.LookupDepth {
		var ids [2]int64
		for i, idx := range []int64{1, int64(n - 1)} {
			if e, err := setNextID(typ, idx); err != nil || e != 0 {
				return nil, fmt.Errorf("next_id %d: %v %v", idx, e, err)
			}
			id, err := create()
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return func() error {
			var buf statBuf
			for i := range ops.LookupRounds {
				if e := ipcCtl(typ, ids[i&1], unix.IPC_STAT, &buf); e != 0 {
					return fmt.Errorf("stat: %v", e)
				}
			}
			return nil
		}, nil
	}
	ids := make([]int64, n)
	for i := range ids {
		id, err := create()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	switch w {
	case ops.ProcReadSparse:
		for i, id := range ids {
			if i%64 != 0 {
				if err := rmid(id); err != nil {
					return nil, err
				}
			}
		}
	case ops.AllocChurn:
		return func() error {
			for range ops.ChurnCycles {
				id, err := create()
				if err != nil {
					return err
				}
				if err := rmid(id); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	path := "/proc/sysvipc/" + typ.String()
	return func() error {
		if _, e, err := t.readProc(path); err != nil || e != 0 {
			return fmt.Errorf("reading %s: %v %v", path, e, err)
		}
		return nil
	}, nil
}

// pingPong is pmsg-shared-like: n pairs of queues, each with a server
// thread of this process (moved into the worker's namespace) asleep in
// msgrcv on its request queue and answering on its response queue. The
// measured part sends one request to every server, then collects every
// answer, blocking, MsgRounds times: the wake-ups the 2016 series moved out
// of the queue lock are on this path.
func (t *thread) pingPong(n int) (func() error, func(), error) {
	if err := checkSleepers(n); err != nil {
		return nil, nil, err
	}
	qs := make([]int64, 2*n)
	remove := func() {
		for _, q := range qs {
			if q != 0 {
				_ = ipcCtl(ops.Msg, q, unix.IPC_RMID, nil)
			}
		}
	}
	for i := range qs {
		id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: ops.IPCPrivate, Mode: 0o600})
		if e != 0 {
			remove()
			return nil, nil, fmt.Errorf("msgget: %v", e)
		}
		qs[i] = id
	}
	nsFD, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("opening the worker's namespace: %w", err)
	}
	defer unix.Close(nsFD)
	joined := make(chan error, n)
	for i := range n {
		req, resp := qs[2*i], qs[2*i+1]
		goLocked(func() {
			if _, _, e := unix.RawSyscall(unix.SYS_SETNS, uintptr(nsFD), unix.CLONE_NEWIPC, 0); e != 0 {
				joined <- fmt.Errorf("a server thread could not join the namespace: %v", e)
				return
			}
			joined <- nil
			var m [2]uint64
			for {
				if e := msgCall(unix.SYS_MSGRCV, req, &m, 8); e != 0 {
					return // EIDRM at teardown
				}
				if e := msgCall(unix.SYS_MSGSND, resp, &m, 4); e != 0 {
					return
				}
			}
		})
	}
	var joinErr error
	for range n { // every thread answers; removing the queues ends those that joined
		if err := <-joined; err != nil {
			joinErr = err
		}
	}
	if joinErr != nil {
		remove()
		return nil, nil, joinErr
	}
	var m [2]uint64
	m[0], m[1] = 1, 0x676e6970 // mtype 1, "ping"
	part := func() error {
		for range ops.MsgRounds {
			for i := range n {
				if e := msgCall(unix.SYS_MSGSND, qs[2*i], &m, 4); e != 0 {
					return fmt.Errorf("msgsnd: %v", e)
				}
			}
			for i := range n {
				if e := msgCall(unix.SYS_MSGRCV, qs[2*i+1], &m, 8); e != 0 {
					return fmt.Errorf("msgrcv: %v", e)
				}
			}
		}
		return nil
	}
	return part, remove, nil
}

// msgCall is msgsnd(q, m, size, 0) or msgrcv(q, m, size, 0, 0) (the same
// arguments), again after EINTR (the Go runtime signals its threads).
func msgCall(nr uintptr, q int64, m *[2]uint64, size uintptr) unix.Errno {
	for {
		_, _, e := unix.Syscall6(nr, uintptr(q), uintptr(unsafe.Pointer(&m[0])), size, 0, 0, 0)
		if e != unix.EINTR {
			return e
		}
	}
}
