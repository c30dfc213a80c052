package vma_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	vmamodel "github.com/ipcfuzz/ipcfuzz/impls/vma"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/vma"
)

// drawQuirks draws a quirk set with every bit of ops.VMAQuirks drawn on its
// own: combinations no kernel has yet are as likely as those of 6.1, 6.12
// and 6.18.
func drawQuirks(t *rapid.T) ops.VMAQuirks {
	var q ops.VMAQuirks
	for bit := ops.VMAQuirks(1); bit&ops.VMAQuirksAll != 0; bit <<= 1 {
		if rapid.Bool().Draw(t, bit.String()) {
			q |= bit
		}
	}
	return q
}

// quirkSide is one model space and the model that serves it.
type quirkSide struct {
	space *vmamodel.Space
	m     ops.Model
}

func newQuirkSide(t *rapid.T, space *vmamodel.Space) quirkSide {
	m := impls.NewAddressSpaceModel(space)
	require.NoError(t, m.Reset(ops.Config{}))
	return quirkSide{space: space, m: m}
}

// apply runs op on the side: a panic is a failure of the script.
func (s quirkSide) apply(op ops.Op) (r ops.Result, snap ops.Snapshot, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if r, err = s.m.Apply(op); err != nil {
		return r, snap, err
	}
	if err = s.space.Check(); err != nil {
		return r, snap, err
	}
	snap, err = s.m.Snapshot()
	if err == nil {
		err = vma.CheckInvariants(snap)
	}
	return r, snap, err
}

// Under every set of quirks a kernel can report, a generated script runs
// on both models without a panic, each keeps its own bookkeeping
// (Space.Check) and the subsystem's invariants after every operation, and
// the naive model (a slice) and the optimized one (a tree) agree on every
// result and state.
func TestModelsUnderEveryQuirkSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := drawQuirks(t)
		script := sub.Draw(engine.NewRapidSource(t), equiv.Exact)
		naive := newQuirkSide(t, vmamodel.NewNaive(q))
		opt := newQuirkSide(t, vmamodel.NewOptimized(q))
		for i, op := range script {
			where := fmt.Sprintf("quirks %s, op %d %s of\n%s", q, i+1, ops.FormatOp(op), ops.Format(ops.NewScript("vma", script[:i+1])))
			rn, sn, err := naive.apply(op)
			require.NoError(t, err, "naive: %s", where)
			ro, so, err := opt.apply(op)
			require.NoError(t, err, "optimized: %s", where)
			require.Equal(t, rn, ro, "result: %s", where)
			require.Equal(t, ops.FormatVMAState(sn.VMA), ops.FormatVMAState(so.VMA), "state: %s", where)
		}
	})
}
