package ipcns

import (
	"fmt"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Resetter is the part of a model that applies its options.
type Resetter interface {
	Reset(cfg ops.Config) error
}

// Measure runs workload w of size n on ns, reps times: the model m resets
// itself with cfg (its options), ns builds the state through its own
// operations, then the measured part is timed and counted here. The
// counters are those of the first repetition, summed over the three tables.
func Measure(m Resetter, ns *Namespace, cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	if err := ops.CheckMeasure(w, n, reps); err != nil {
		return ops.Measurement{}, err
	}
	if err := m.Reset(cfg); err != nil {
		return ops.Measurement{}, err
	}
	if w == ops.MsgFullQueue || w == ops.MsgPingPong {
		return measureMsg(ns, w, n, reps)
	}
	part, err := ns.setup(w, n)
	if err != nil {
		return ops.Measurement{}, fmt.Errorf("%s setup at n=%d: %w", w, n, err)
	}
	res := ops.Measurement{WallNs: make([]int64, reps), Primary: ns.types[ops.Msg].table.CostCounter()}
	for i := range reps {
		before := ns.counters()
		start := time.Now()
		part()
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if i == 0 {
			res.Counters = map[string]int64{}
			for k, v := range ns.counters() {
				res.Counters[k] = v - before[k]
			}
		}
	}
	return res, nil
}

// counters sums the counters of the three tables.
func (ns *Namespace) counters() map[string]int64 {
	sum := map[string]int64{}
	for _, s := range ns.types {
		for k, v := range s.table.Counters() {
			sum[k] += v
		}
	}
	return sum
}

// setup builds the state of a workload through the namespace's own
// operations and returns the measured part.
func (ns *Namespace) setup(w ops.Workload, n int) (func(), error) {
	t := ops.Msg
	switch w {
	case ops.ProcReadShm:
		t = ops.Shm
	case ops.ProcReadSem:
		t = ops.Sem
	}
	ns.types[t].limit = ops.IPCMNI
	create := func() (int64, error) {
		op := ops.Op{Kind: ops.KindGet, Type: t, Key: ops.IPCPrivate, Mode: 0600, Size: 1}
		if t == ops.Shm {
			op.Size = 4096
		}
		r := ns.get(op)
		if r.Err != ops.OK {
			return 0, fmt.Errorf("create %s: %v", t, r.Err)
		}
		return r.ID, nil
	}
	rmid := func(id int64) error {
		if e, _ := ns.rmid(ops.Op{Kind: ops.KindRmid, Type: t, Obj: ops.Ref{ID: id}}); e != ops.OK {
			return fmt.Errorf("rmid %s %d: %v", t, id, e)
		}
		return nil
	}
	switch w {
	case ops.LookupDepth:
		var ids [2]int64
		for i, idx := range []int{1, n - 1} {
			ns.types[t].nextID = int64(idx)
			id, err := create()
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return func() {
			for i := range ops.LookupRounds {
				ns.stat(ops.Op{Kind: ops.KindStat, Type: t, Obj: ops.Ref{ID: ids[i&1]}})
			}
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
		return func() {
			for range ops.ChurnCycles {
				if id, err := create(); err == nil {
					_ = rmid(id)
				}
			}
		}, nil
	}
	return func() { ns.list(t) }, nil
}

// measureMsg runs a message-queue workload; its counters are the workload's
// own (wake-ups), not the tables'.
func measureMsg(ns *Namespace, w ops.Workload, n, reps int) (ops.Measurement, error) {
	part, counters, err := msgWorkload(w, n, ns.msgPolicy)
	if err != nil {
		return ops.Measurement{}, err
	}
	res := ops.Measurement{WallNs: make([]int64, reps), Primary: "spurious_per_receive"}
	if w == ops.MsgPingPong {
		res.Primary = "msg_ops"
	}
	for i := range reps {
		start := time.Now()
		part()
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if i == 0 {
			res.Counters = *counters
		}
	}
	return res, nil
}
