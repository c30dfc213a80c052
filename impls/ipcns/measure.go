package ipcns

import (
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// Measure runs workload w of size n on ns, reps times: m (the model, which
// resets itself with cfg, its options) runs a plain workload's scripts
// through its own operations (ops.MeasureScripts); the workloads with
// sleepers by the hundred run here on the namespace's own structures.
func Measure(m ops.Model, ns *Namespace, cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	if err := ops.CheckMeasure(w, n, reps); err != nil {
		return ops.Measurement{}, err
	}
	switch w {
	case ops.MsgFullQueue, ops.MsgPingPong:
		if err := m.Reset(cfg); err != nil {
			return ops.Measurement{}, err
		}
		return measureMsg(ns, w, n, reps)
	case ops.SemSleepers:
		if err := m.Reset(cfg); err != nil {
			return ops.Measurement{}, err
		}
		return measureSemSleepers(ns.semOpts, n, reps), nil
	}
	return ops.MeasureScripts(m, cfg, w, n, reps)
}

// Counters implements ops.Counting: the work of the three tables, and of
// the message operations (msgsnd and msgrcv calls, the senders they woke,
// those woken for nothing, those moved to the tail).
func (ns *Namespace) Counters() map[string]int64 {
	sum := map[string]int64{
		"msgsnd": ns.msgWork.sends, "msgrcv": ns.msgWork.receives,
		"wakeups": ns.msgWork.wakeups, "spurious": ns.msgWork.spurious, "requeues": ns.msgWork.requeues,
	}
	for _, sp := range ns.spaces {
		for _, s := range sp.types {
			for k, v := range s.table.Counters() {
				sum[k] += v
			}
		}
	}
	return sum
}

// PrimaryCounter implements ops.Counting.
func (ns *Namespace) PrimaryCounter() string { return ns.spaces[0].types[ops.Msg].table.CostCounter() }

// measureSemSleepers is sem-sleepers on one array of the model's
// structure: n tasks asleep each on its own semaphore, then rounds of a +1
// that completes one of them, which goes back to sleep. The counter is the
// array's evaluations (semq.Array.Evaluations) per round.
func measureSemSleepers(opts semq.Options, n, reps int) ops.Measurement {
	a := semq.NewArray(n, opts)
	pid := ops.TaskPID(0, 0)
	for t := range n {
		a.Semop(ops.PID(t+10), t+1, []semq.Sop{{Num: t, Op: -1}})
	}
	res := ops.Measurement{WallNs: make([]int64, reps), Primary: "evaluations_per_round"}
	for i := range reps {
		before := a.Evaluations()
		start := time.Now()
		for r := range ops.SemRounds {
			k := r % n
			a.Semop(pid, 0, []semq.Sop{{Num: k, Op: 1}})
			a.Semop(ops.PID(k+10), k+1, []semq.Sop{{Num: k, Op: -1}})
		}
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if i == 0 {
			res.Counters = map[string]int64{"evaluations_per_round": (a.Evaluations() - before) / ops.SemRounds}
		}
	}
	return res
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
