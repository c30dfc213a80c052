//go:build linux && amd64

package kernel

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The workloads of Measure. Each builds its state with real syscalls on
// the worker thread, in a fresh namespace, and returns the measured part:
// direct syscalls on the worker thread, since through Apply the adapter's
// own work per operation (a few microseconds) would swamp what is measured
// (a lookup's nanoseconds). A workload with sleepers also returns their
// teardown.

// measure runs workload w of size size in a fresh namespace: setup, one
// warm-up repetition, then reps timed ones. A workload with a probe also
// reports what it counted: the mean of each counter's growth across one
// timed repetition (the probe runs outside the timing).
func (n *ns) measure(w ops.Workload, size, reps int) (ops.Measurement, error) {
	n.dirty = true
	if err := n.reset(); err != nil {
		return ops.Measurement{}, err
	}
	n.dirty = true
	r, err := n.setup(w, size)
	if r.teardown != nil {
		defer r.teardown() // IPC_RMID: the sleepers return EIDRM and their threads end
	}
	if err != nil {
		return ops.Measurement{}, fmt.Errorf("kernel: %s setup at n=%d: %w", w, size, err)
	}
	if err := r.part(); err != nil { // warm-up
		return ops.Measurement{}, err
	}
	res := ops.Measurement{WallNs: make([]int64, reps), Counters: map[string]int64{}}
	for i := range reps {
		var before map[string]int64
		if r.probe != nil {
			if before, err = r.probe(); err != nil {
				return ops.Measurement{}, fmt.Errorf("kernel: %s at n=%d: %w", w, size, err)
			}
		}
		start := time.Now()
		err := r.part()
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if err != nil {
			return ops.Measurement{}, fmt.Errorf("kernel: %s at n=%d: %w", w, size, err)
		}
		if r.probe != nil {
			after, err := r.probe()
			if err != nil {
				return ops.Measurement{}, fmt.Errorf("kernel: %s at n=%d: %w", w, size, err)
			}
			for k, v := range after {
				res.Counters[k] += v - before[k]
			}
		}
	}
	for k := range res.Counters {
		res.Counters[k] /= int64(reps)
	}
	return res, nil
}

// run is a workload built and ready to measure.
type run struct {
	part     func() error // the measured part
	teardown func()       // ends its sleepers; nil: it has none
	// probe returns the running totals of what the workload counts (nil:
	// it counts nothing), once what the part set going has settled.
	probe func() (map[string]int64, error)
}

// setup builds workload w of size size.
func (n *ns) setup(w ops.Workload, size int) (run, error) {
	var r run
	var err error
	switch w {
	case ops.MsgFullQueue:
		return fullQueue(size)
	case ops.MsgPingPong:
		r.part, r.teardown, err = pingPong(size)
	case ops.SemSleepers:
		r.part, r.teardown, err = semSleepers(n.tasks.pool.Bin(), size, ops.SemRounds)
	case ops.SemopDepth:
		r.part, err = semopDepth(size, ops.LookupRounds)
	default:
		r.part, err = n.setupObjects(w, size)
	}
	return r, err
}

// setupObjects builds a workload of objects of one type (lookups, listings,
// churn) in a namespace whose object limit it raises.
func (n *ns) setupObjects(w ops.Workload, size int) (func() error, error) {
	o := objects{typ: ops.Msg}
	switch w {
	case ops.ProcReadShm:
		o.typ = ops.Shm
	case ops.ProcReadSem:
		o.typ = ops.Sem
	}
	if e, err := n.proc.setLimit(o.typ, ops.IPCMNI); err != nil || e != 0 {
		return nil, fmt.Errorf("raising the %s limit in the private namespace: %v %v", o.typ, e, err)
	}
	if w == ops.LookupDepth {
		return o.lookupDepth(size)
	}
	ids := make([]int64, size)
	for i := range ids {
		id, err := o.create()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	switch w {
	case ops.ProcReadSparse:
		for i, id := range ids {
			if i%64 != 0 {
				if err := o.rmid(id); err != nil {
					return nil, err
				}
			}
		}
	case ops.AllocChurn:
		return o.churn, nil
	}
	path := "/proc/sysvipc/" + o.typ.String()
	return func() error {
		if _, e, err := n.proc.read(path); err != nil || e != 0 {
			return fmt.Errorf("reading %s: %v %v", path, e, err)
		}
		return nil
	}, nil
}

// objects are the private objects of one type a workload makes.
type objects struct{ typ ops.IPCType }

func (o objects) create() (int64, error) {
	op := ops.Op{Kind: ops.KindGet, Type: o.typ, Key: ops.IPCPrivate, Mode: 0600, Size: 1}
	if o.typ == ops.Shm {
		op.Size = 4096
	}
	id, e := ipcGet(op)
	if e != 0 {
		return 0, fmt.Errorf("create %s: %v", o.typ, e)
	}
	return id, nil
}

func (o objects) rmid(id int64) error {
	if e := ipcCtl(o.typ, id, unix.IPC_RMID, nil); e != 0 {
		return fmt.Errorf("rmid %s %d: %v", o.typ, id, e)
	}
	return nil
}

// churn creates and removes an object, ops.ChurnCycles times.
func (o objects) churn() error {
	for range ops.ChurnCycles {
		id, err := o.create()
		if err != nil {
			return err
		}
		if err := o.rmid(id); err != nil {
			return err
		}
	}
	return nil
}

// lookupDepth places two objects at idx 1 and idx size-1 through
// <type>_next_id; the measured part stats them in turn.
func (o objects) lookupDepth(size int) (func() error, error) {
	var ids [2]int64
	for i, idx := range []int64{1, int64(size - 1)} {
		if e, err := (&procfs{}).setNextID(o.typ, idx); err != nil || e != 0 {
			return nil, fmt.Errorf("next_id %d: %v %v", idx, e, err)
		}
		id, err := o.create()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return func() error {
		var buf statBuf
		for i := range ops.LookupRounds {
			if e := ipcCtl(o.typ, ids[i&1], unix.IPC_STAT, &buf); e != 0 {
				return fmt.Errorf("stat: %v", e)
			}
		}
		return nil
	}, nil
}
