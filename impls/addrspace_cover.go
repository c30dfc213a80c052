package impls

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// coverer is an address space that reports the kernel program counters its
// operations reached (KCOV): the kernel's VMA helper.
type coverer interface {
	// EnableCover starts collecting; false where the kernel has no KCOV.
	EnableCover() (bool, error)
	// CoverPCs returns what was collected since the last call.
	CoverPCs() ([]uint64, error)
}

// pipeliner is an address space that can be told the operations a script
// will apply, in order, after its reset, and the state read after them
// (the kernel's VMA helper sends their requests ahead: no round trip
// between two of them).
type pipeliner interface {
	Pipeline(script []ops.Op, final bool) error
}

// pipelined is the vma part running script: its reset tells the space
// what follows it.
type pipelined struct {
	*AddressSpaceModel
	p      pipeliner
	script []ops.Op
}

// Reset implements ops.Model.
func (x pipelined) Reset(cfg ops.Config) error {
	if err := x.AddressSpaceModel.Reset(cfg); err != nil {
		return err
	}
	return x.p.Pipeline(x.script, true)
}

// syscallCounter is an address space that counts the system calls it
// enters (the kernel's VMA helper, where the kernel can count them).
type syscallCounter interface {
	// SyscallCount is the count of the process serving now (pid), since
	// it was first asked; ok false where it cannot be counted.
	SyscallCount() (pid int, n int64, ok bool)
}

// syscallTimer is an address space that times its operations' system
// calls (the kernel's VMA helper: its CPU time on each request).
type syscallTimer interface {
	// TimeSyscalls turns the timing on or off.
	TimeSyscalls(on bool)
	// SyscallTime is the CPU time of the requests timed so far, and the
	// clock reads (system calls) that took.
	SyscallTime() (nanos, reads int64)
}

// Run implements ops.ScriptRunner: ops.Run, and where cfg.Observe.Cover
// asks for coverage and the space reports it, each operation's program
// counters in Outcome.Observed; where cfg.Observe.Time asks for times and
// the space counts or times its system calls, each operation's count and
// time.
func (m *AddressSpaceModel) Run(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	var model ops.Model = m
	var cov *coveredSpace
	if c, ok := m.as.(coverer); ok && cfg.Observe.Cover {
		cov = &coveredSpace{AddressSpaceModel: m, c: c}
		model = cov
	}
	var cnt *countedSpace
	sc, counts := m.as.(syscallCounter)
	st, times := m.as.(syscallTimer)
	if (counts || times) && cfg.Observe.Time {
		cnt = &countedSpace{Model: model, sc: sc, st: st}
		model = cnt
	}
	if pl, ok := m.as.(pipeliner); ok && cov == nil && cnt == nil {
		model = pipelined{AddressSpaceModel: m, p: pl, script: script}
	}
	out, err := ops.Run(model, cfg, script)
	if cov != nil && cov.on {
		if len(out.Observed) < len(cov.pcs) {
			out.Observed = append(out.Observed, make([]ops.Observation, len(cov.pcs)-len(out.Observed))...)
		}
		for i, pcs := range cov.pcs {
			out.Observed[i].PCs = pcs
		}
	}
	if cnt != nil {
		for i, n := range cnt.n {
			if i < len(out.Observed) {
				out.Observed[i].Syscalls = n
				out.Observed[i].SyscallNanos = cnt.nanos[i]
			}
		}
	}
	return out, err
}

// countedSpace counts each operation's system calls in the space
// (syscallCounter, nil where the space counts none) and times them
// (syscallTimer, nil where it times none), around the model that applies
// it; the timing's clock reads are left out of the count.
type countedSpace struct {
	ops.Model
	sc    syscallCounter
	st    syscallTimer
	n     []int64
	nanos []int64
}

func (cs *countedSpace) Apply(op ops.Op) (ops.Result, error) {
	var pb, pa int
	var b, a, tb, ta, rb, ra int64
	var okB, okA bool
	if cs.sc != nil {
		pb, b, okB = cs.sc.SyscallCount()
	}
	if cs.st != nil {
		tb, rb = cs.st.SyscallTime()
		cs.st.TimeSyscalls(true)
	}
	r, err := cs.Model.Apply(op)
	if cs.st != nil {
		cs.st.TimeSyscalls(false)
		ta, ra = cs.st.SyscallTime()
	}
	if cs.sc != nil {
		pa, a, okA = cs.sc.SyscallCount()
	}
	switch {
	case !okA:
		a = 0
	case okB && pa == pb:
		a -= b
	}
	cs.n = append(cs.n, max(a-(ra-rb), 0))
	cs.nanos = append(cs.nanos, max(ta-tb, 0))
	return r, err
}

// coveredSpace is the model of one covered run: after the reset (which may
// have started a new helper) it enables coverage and drops what the reset
// collected; after each operation it takes that operation's.
type coveredSpace struct {
	*AddressSpaceModel
	c   coverer
	on  bool
	pcs [][]uint64
}

func (cs *coveredSpace) Reset(cfg ops.Config) error {
	if err := cs.AddressSpaceModel.Reset(cfg); err != nil {
		return err
	}
	on, err := cs.c.EnableCover()
	if err != nil {
		return err
	}
	cs.on = on
	if on {
		_, err = cs.c.CoverPCs()
	}
	return err
}

func (cs *coveredSpace) Apply(op ops.Op) (ops.Result, error) {
	r, err := cs.AddressSpaceModel.Apply(op)
	if err != nil || !cs.on {
		return r, err
	}
	pcs, perr := cs.c.CoverPCs()
	if perr != nil {
		return r, perr
	}
	cs.pcs = append(cs.pcs, ops.FirstSeen(pcs))
	return r, nil
}
