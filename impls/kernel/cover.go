//go:build linux && amd64

package kernel

import (
	"errors"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// kcovState is the worker thread's KCOV: opened on the thread the first
// time a run asks for coverage (Config.Observe.Cover), kept for the
// thread's life, closed on it when it ends (ns.close). Where the kernel
// has no KCOV the run's observations carry no PCs, and Open is not tried
// again.
type kcovState struct {
	tracer *kcov.Tracer
	absent bool  // the kernel has no KCOV
	err    error // why opening failed otherwise
}

// tracer returns the thread's Tracer, opening it; nil where the kernel has
// none. It runs on the worker thread.
func (n *ns) tracer() (*kcov.Tracer, error) {
	k := &n.kcov
	if k.tracer != nil || k.absent || k.err != nil {
		return k.tracer, k.err
	}
	t, err := kcov.Open(0)
	switch {
	case errors.Is(err, kcov.ErrNoKCOV):
		k.absent = true
	case err != nil:
		k.err = err
	default:
		k.tracer = t
	}
	return k.tracer, k.err
}

// closeTracer disables KCOV on the thread; it runs on the thread, last.
func (n *ns) closeTracer() {
	if n.kcov.tracer != nil {
		_ = n.kcov.tracer.Close()
		n.kcov.tracer = nil
	}
}

// covering is onThread for a run that asks for coverage: each operation's
// kernel program counters are appended to pcs, one slice per operation.
// They are those of the worker thread's own syscalls (t, nil for none),
// then those of the task processes' calls (tc, the pool's coverage, on
// for the run: each task call asks its task to trace it, package task)
// whose answers were collected during the operation. A call that sleeps
// (a msgrcv that waits for a message, a semop that waits) answers when it
// returns, and its program counters are those of the operation during
// which the worker collected that answer: the one that woke it, or a later
// one; what the kernel did in the sleeping task is counted all the same,
// once, under that operation. An answer collected outside an operation
// (at the reset before a script, which interrupts a call left asleep) is
// dropped, as are the worker's syscalls there.
type covering struct {
	onThread
	t   *kcov.Tracer
	tc  *task.Coverage
	pcs [][]uint64
	raw []uint64 // the current operation's whole trace, reused
}

func (c *covering) Apply(op ops.Op) (ops.Result, error) {
	c.tc.PCs = c.tc.PCs[:0]
	if c.t != nil {
		c.t.Reset()
	}
	r, err := c.onThread.Apply(op)
	c.raw = c.raw[:0]
	if c.t != nil {
		c.raw = c.t.PCs(c.raw)
	}
	c.raw = append(c.raw, c.tc.PCs...)
	c.pcs = append(c.pcs, ops.FirstSeen(c.raw))
	return r, err
}

// runCovered is ops.Run on the thread, with each operation's PCs (the
// worker thread's and the task processes', covering) in out.Observed when
// cfg.Observe.Cover asks for them and the kernel has KCOV, and its system
// calls (counting: how many, where the kernel can count them, and their
// CPU time) when cfg.Observe.Time asks for times. It runs on the worker
// thread.
func (n *ns) runCovered(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	var m ops.Model = onThread{n}
	var cnt *counting
	if cfg.Observe.Time {
		cnt = &counting{Model: m, c: n.syscallCounter(), t: n.tasks.pool.Time()}
		m = cnt
	}
	if !cfg.Observe.Cover {
		out, err := ops.Run(m, cfg, script)
		return out, cnt.fill(out, err)
	}
	t, err := n.tracer()
	if err != nil {
		return ops.Outcome{}, err
	}
	if t == nil {
		out, err := ops.Run(m, cfg, script)
		return out, cnt.fill(out, err)
	}
	out, err := n.runTraced(cfg, script, t, cnt)
	return out, cnt.fill(out, err)
}

// runTraced is ops.Run on the thread with each operation's PCs, those of
// the worker thread (t, or none when nil) and of the task processes, in
// out.Observed; counted by cnt too where it is not nil. It runs on the
// worker thread.
func (n *ns) runTraced(cfg ops.Config, script []ops.Op, t *kcov.Tracer, cnt *counting) (ops.Outcome, error) {
	tc := n.tasks.pool.Cover()
	tc.On = true
	defer func() {
		tc.On = false
		tc.PCs = tc.PCs[:0]
	}()
	c := &covering{onThread: onThread{n}, t: t, tc: tc}
	var m ops.Model = c
	if cnt != nil {
		cnt.Model, m = c, cnt
	}
	out, err := ops.Run(m, cfg, script)
	if len(out.Observed) < len(c.pcs) {
		out.Observed = append(out.Observed, make([]ops.Observation, len(c.pcs)-len(out.Observed))...)
	}
	for i, pcs := range c.pcs {
		out.Observed[i].PCs = pcs
	}
	return out, err
}
