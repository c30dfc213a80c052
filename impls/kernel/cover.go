//go:build linux && amd64

package kernel

import (
	"errors"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
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
// kernel program counters (those of the worker thread's own syscalls: an
// operation of a task process t1..t15 runs there, untraced) are appended
// to pcs, one slice per operation.
type covering struct {
	onThread
	t   *kcov.Tracer
	pcs [][]uint64
}

func (c *covering) Apply(op ops.Op) (ops.Result, error) {
	c.t.Reset()
	r, err := c.onThread.Apply(op)
	c.pcs = append(c.pcs, c.t.PCs(nil))
	return r, err
}

// runCovered is ops.Run on the thread, with each operation's PCs in
// out.Observed when cfg.Observe.Cover asks for them and the kernel has
// KCOV. It runs on the worker thread.
func (n *ns) runCovered(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	if !cfg.Observe.Cover {
		return ops.Run(onThread{n}, cfg, script)
	}
	t, err := n.tracer()
	if err != nil {
		return ops.Outcome{}, err
	}
	if t == nil {
		return ops.Run(onThread{n}, cfg, script)
	}
	c := &covering{onThread: onThread{n}, t: t}
	out, err := ops.Run(c, cfg, script)
	if len(out.Observed) < len(c.pcs) {
		out.Observed = append(out.Observed, make([]ops.Observation, len(c.pcs)-len(out.Observed))...)
	}
	for i, pcs := range c.pcs {
		out.Observed[i].PCs = pcs
	}
	return out, err
}
