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

// Run implements ops.ScriptRunner: ops.Run, and where cfg.Observe.Cover
// asks for coverage and the space reports it, each operation's program
// counters in Outcome.Observed.
func (m *AddressSpaceModel) Run(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	c, ok := m.as.(coverer)
	if !cfg.Observe.Cover || !ok {
		return ops.Run(m, cfg, script)
	}
	cm := &coveredSpace{AddressSpaceModel: m, c: c}
	out, err := ops.Run(cm, cfg, script)
	if cm.on {
		if len(out.Observed) < len(cm.pcs) {
			out.Observed = append(out.Observed, make([]ops.Observation, len(cm.pcs)-len(out.Observed))...)
		}
		for i, pcs := range cm.pcs {
			out.Observed[i].PCs = pcs
		}
	}
	return out, err
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
