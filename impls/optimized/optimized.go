// Package optimized is the model of the SysV IPC id space as Linux has it
// after the patches: a 64-way radix tree like the kernel's idr, cyclic
// allocation (5.2), a hashed key table (4.14), max_idx kept on removal and
// the /proc/sysvipc walk that stops at max_idx (5.15) and finds records with
// idr_get_next (6.1).
package optimized

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// Options are the options the optimized model's Reset takes.
var Options = ipcns.Options

// Model is the optimized model.
type Model struct {
	*ipcns.Namespace
}

// New returns an optimized model.
func New() (ops.Model, error) {
	ns := ipcns.New(func() ipcns.Table { return NewIDR() }, ipcns.Cyclic)
	ns.SetSemOptions(semq.Options{Structure: semq.PerSemaphore})
	return &Model{ns}, nil
}

// Reset implements ops.Model; the optimized model takes only caps (see
// ops.OptionCaps).
func (m *Model) Reset(cfg ops.Config) error {
	if err := m.Namespace.Reset(cfg); err != nil {
		return fmt.Errorf("optimized: %w", err)
	}
	return nil
}

// Measure implements ops.Measurer.
func (m *Model) Measure(cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	return ipcns.Measure(m, m.Namespace, cfg, w, n, reps)
}
