package impls

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/vma"
)

// AddressSpaceModel serves an ops.AddressSpace (a VMA model, or the kernel's
// helper process) as the vma part of a composed implementation.
type AddressSpaceModel struct {
	as ops.AddressSpace
	// remake builds a model space for other quirks (the kernel's, reported
	// as the limit.vma_quirks option); nil for the kernel itself.
	remake func(ops.VMAQuirks) ops.AddressSpace
	quirks ops.VMAQuirks
	// other are the other side's quirks (ops.FactVMAQuirks), 0 when it
	// reports none.
	other ops.VMAQuirks
}

// NewAddressSpaceModel returns the vma part for as, a fixed space.
func NewAddressSpaceModel(as ops.AddressSpace) *AddressSpaceModel {
	return &AddressSpaceModel{as: as}
}

// NewVMAModelPart returns the vma part of a model: a space made for quirks,
// made again when Reset gives other ones (option limit.vma_quirks).
func NewVMAModelPart(make func(ops.VMAQuirks) ops.AddressSpace) *AddressSpaceModel {
	q := ops.VMAQuirksLinux618
	return &AddressSpaceModel{as: make(q), remake: make, quirks: q}
}

// Reset implements ops.Model: a model space follows the rules of the other
// side's kernel (ops.FactVMAQuirks), or ops.VMAQuirksLinux618 when none
// is given, or those its vma_rules and remap_order options ask for, and is
// made again when they change.
func (m *AddressSpaceModel) Reset(cfg ops.Config) error {
	other, known := cfg.Facts.VMAQuirks()
	m.other = other
	q := withRemapOrder(withRules(other, known, cfg.Options), cfg.Options)
	if m.remake != nil && q != m.quirks {
		if err := m.as.Close(); err != nil {
			return err
		}
		m.as, m.quirks = m.remake(q), q
	}
	return m.as.Reset()
}

// Facts implements FactReporter: a space that knows the rules its kernel
// follows (the kernel's helper) reports them as ops.FactVMAQuirks.
func (m *AddressSpaceModel) Facts() ops.Facts {
	if q, ok := m.as.(interface{ Quirks() ops.VMAQuirks }); ok && m.remake == nil {
		return ops.Facts{}.With(ops.FactVMAQuirks, int64(q.Quirks()))
	}
	return ops.Facts{}
}

// Apply implements ops.Model: the space's call for op's kind (vmaHandlers).
func (m *AddressSpaceModel) Apply(op ops.Op) (ops.Result, error) {
	h, ok := vmaHandlers.Of(op.Kind)
	if !ok {
		return ops.Result{}, vmaHandlers.Unhandled(op.Kind)
	}
	return h(m, op)
}

// vmaHandler runs one operation of its kind on the vma part.
type vmaHandler func(m *AddressSpaceModel, op ops.Op) (ops.Result, error)

// vmaHandlers is the vma part's table of kinds (ops.Handlers): each kind
// is one call of ops.AddressSpace.
var vmaHandlers = ops.NewHandlers[vmaHandler]("the vma part")

// on adapts a call of the space on what args takes of the operation.
func on[A any](args func(ops.Op) A, f func(ops.AddressSpace, A) (ops.Errno, error)) vmaHandler {
	return func(m *AddressSpaceModel, op ops.Op) (ops.Result, error) {
		e, err := f(m.as, args(op))
		return ops.Result{Err: e}, err
	}
}

// onRange adapts a call on op's range; onFile one on op's file.
func onRange(f func(ops.AddressSpace, ops.VMAArgs) (ops.Errno, error)) vmaHandler {
	return on(func(op ops.Op) ops.VMAArgs { return op.VMA }, f)
}

func onFile(f func(ops.AddressSpace, ops.VMAFileArgs) (ops.Errno, error)) vmaHandler {
	return on(ops.Op.FileArgs, f)
}

func init() {
	for k, f := range map[ops.Kind]func(ops.AddressSpace, ops.VMAArgs) (ops.Errno, error){
		ops.KindMap: ops.AddressSpace.Map, ops.KindUnmap: ops.AddressSpace.Unmap, ops.KindProtect: ops.AddressSpace.Protect,
		ops.KindTouch: ops.AddressSpace.Touch, ops.KindAdvise: ops.AddressSpace.Advise, ops.KindLock: ops.AddressSpace.Lock,
		ops.KindUnlock: ops.AddressSpace.Unlock, ops.KindBrk: ops.AddressSpace.Brk, ops.KindSeal: ops.AddressSpace.Seal,
		ops.KindMemlock: ops.AddressSpace.Memlock,
	} {
		vmaHandlers.Add(onRange(f), k)
	}
	for k, f := range map[ops.Kind]func(ops.AddressSpace, ops.VMAFileArgs) (ops.Errno, error){
		ops.KindOpen: ops.AddressSpace.Open, ops.KindReopen: ops.AddressSpace.Reopen, ops.KindDup: ops.AddressSpace.Dup,
	} {
		vmaHandlers.Add(onFile(f), k)
	}
	vmaHandlers.Add(func(m *AddressSpaceModel, op ops.Op) (ops.Result, error) {
		if op.VMA.MayMove {
			at, e, err := m.as.RemapMayMove(op.VMA)
			return ops.Result{Err: e, ID: at}, err
		}
		return onRange(ops.AddressSpace.Remap)(m, op)
	}, ops.KindRemap)
	vmaHandlers.Add(func(m *AddressSpaceModel, _ ops.Op) (ops.Result, error) {
		e, err := m.as.Fork()
		return ops.Result{Err: e}, err
	}, ops.KindFork)
	vmaHandlers.Add(func(m *AddressSpaceModel, _ ops.Op) (ops.Result, error) {
		st, err := m.shown()
		return ops.Result{Layout: st}, err
	}, ops.KindLayout)
}

// Snapshot implements ops.Model. A model shows the VmFlags as the other
// side's kernel does (showFlags). A kernel compared with a kernel built
// with soft-dirty tracking shows sd as that one does: configuration, not
// behaviour; names are the kernel's own (a version difference).
func (m *AddressSpaceModel) Snapshot() (ops.Snapshot, error) {
	st, err := m.shown()
	return ops.Snapshot{VMA: st}, err
}

// shown is the state as the snapshot and the layout operation show it.
func (m *AddressSpaceModel) shown() (ops.VMAState, error) {
	st, err := m.as.State()
	show := m.quirks
	if m.remake == nil {
		show = m.other & ops.QuirkSoftDirty
	}
	for i := range st.VMAs {
		st.VMAs[i].Flags = showFlags(st.VMAs[i].Flags, show)
	}
	return st, err
}

// The flags whose display depends on a kernel's configuration or its
// table of names, not on what it does.
var (
	flagSoftDirty   = ops.MustVMAFlags("sd")
	flagLockOnFault = ops.MustVMAFlags("lf")
	flagUnnamed     = ops.MustVMAFlags(ops.VMAFlagUnnamed)
)

// showFlags is what smaps shows of flags on a kernel with quirks q: sd on
// every VMA where it is built with soft-dirty tracking (nothing here
// clears it), "??" for VM_LOCKONFAULT where it has no name.
func showFlags(f ops.VMAFlags, q ops.VMAQuirks) ops.VMAFlags {
	if q&ops.QuirkSoftDirty != 0 {
		f |= flagSoftDirty
	}
	if q&ops.QuirkLockOnFaultUnnamed != 0 && f&flagLockOnFault != 0 {
		f = f&^flagLockOnFault | flagUnnamed
	}
	return f
}

// Measure implements ops.Measurer for brk-expand, when the space measures
// it, and for a pattern of the vma subsystem (ops.MeasurePattern), counted
// when the space counts its layout's walks (the models).
func (m *AddressSpaceModel) Measure(cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	if ops.IsPattern(w) {
		p, err := ops.PatternOf(w)
		if err != nil {
			return ops.Measurement{}, err
		}
		var model ops.Model = m
		if _, ok := m.as.(walker); ok {
			model = countingSpace{m}
		}
		if w, ok := m.as.(interface{ WidenWindow() func() }); ok {
			defer w.WidenWindow()()
		}
		return ops.MeasurePattern(model, cfg, p, n, reps)
	}
	mb, ok := m.as.(interface {
		MeasureBrkExpand(n, reps int) (ops.Measurement, error)
	})
	if w != ops.BrkExpand || !ok {
		return ops.Measurement{}, fmt.Errorf("the vma part does not measure %s", w)
	}
	return mb.MeasureBrkExpand(n, reps)
}

// Close implements ops.Model.
func (m *AddressSpaceModel) Close() error { return m.as.Close() }

// walker is a space that counts the walks of its layout (the models).
type walker interface{ Walks() vma.Walks }

// countingSpace is the vma part of a model as an ops.Counting: the walks
// of its layout and the nodes they visited.
type countingSpace struct{ *AddressSpaceModel }

// Counters implements ops.Counting.
func (c countingSpace) Counters() map[string]int64 {
	w := c.as.(walker).Walks()
	return map[string]int64{"walks": w.Walks, "nodes": w.Nodes}
}

// PrimaryCounter implements ops.Counting.
func (countingSpace) PrimaryCounter() string { return "nodes" }
