// Package naive is the reference model of the SysV IPC id space, written with
// the simplest structures and the pre-patch algorithms: a slice of slots
// scanned linearly, a linear key search (before 4.14), a linear rescan for
// max_idx on removal (4.14) and the /proc/sysvipc walk of Linux <= 5.14,
// which recounts live ids from 0 for every record (quadratic over a read),
// and the message-queue sender wake-up of Linux < 4.9 (every receive wakes
// every sleeping sender).
//
// Options: alloc=cyclic (default, Linux >= 5.2) or alloc=legacy (lowest free
// idx, seq bumped on every allocation, Linux < 5.2); ncnt=sus (default,
// Linux >= 3.16) or ncnt=legacy (GETNCNT/GETZCNT count a sleeping task on
// every semaphore its operation waits on, as before 3.16).
package naive

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
)

// Options are the options the naive model's Reset takes.
var Options = ops.OptionSpecs{
	{Name: "alloc", Values: []string{"cyclic", "legacy"}, Doc: "id allocation: cyclic (Linux >= 5.2) or lowest free idx with seq bumped on every allocation (< 5.2)"},
	{Name: "ncnt", Values: []string{"sus", "legacy"}, Doc: "GETNCNT/GETZCNT: count a task on the semaphore it waits on (>= 3.16) or on every one its operation names (3.10-3.15)"},
	ops.CapsOption,
}

// Model is the naive model.
type Model struct {
	*ipcns.Namespace
}

// New returns a naive model with the cyclic allocator.
func New() (ops.Model, error) {
	ns := ipcns.New(func() ipcns.Table { return &Slots{} }, ipcns.Cyclic)
	ns.SetMsgPolicy(msgq.WakeAll)
	ns.SetSemOptions(semq.Options{Structure: semq.Scan})
	return &Model{ns}, nil
}

// Reset implements ops.Model and takes Options.
func (m *Model) Reset(cfg ops.Config) error {
	opts, err := Options.Parse(cfg.Options)
	if err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	alloc := ipcns.Cyclic
	if opts["alloc"] == "legacy" {
		alloc = ipcns.Legacy
	}
	m.SetAllocator(alloc)
	m.SetSemOptions(semq.Options{Structure: semq.Scan, LegacyCount: opts["ncnt"] == "legacy"})
	rest := cfg
	rest.Options = ipcns.Options.Only(cfg.Options)
	if err := m.Namespace.Reset(rest); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	return nil
}

// Slots is the naive table: slot i holds the object with idx i.
type Slots struct {
	slots  []*ipcns.Obj
	n      int
	maxIdx int
	probes int64
}

// Get implements ipcns.Table.
func (s *Slots) Get(idx int) *ipcns.Obj {
	s.probes++
	if idx < 0 || idx >= len(s.slots) {
		return nil
	}
	return s.slots[idx]
}

// FindFree implements ipcns.Table by probing every slot from the start.
func (s *Slots) FindFree(from, to int) int {
	for i := from; i < to; i++ {
		if s.Get(i) == nil {
			return i
		}
	}
	return -1
}

// Insert implements ipcns.Table.
func (s *Slots) Insert(o *ipcns.Obj) {
	for len(s.slots) <= o.Idx {
		s.slots = append(s.slots, nil)
	}
	s.slots[o.Idx] = o
	s.n++
	if s.n == 1 || o.Idx > s.maxIdx {
		s.maxIdx = o.Idx
	}
}

// Remove implements ipcns.Table; removing the highest idx rescans downwards.
func (s *Slots) Remove(idx int) {
	s.slots[idx] = nil
	s.n--
	if idx == s.maxIdx {
		s.maxIdx = -1
		for i := idx - 1; i >= 0; i-- {
			if s.Get(i) != nil {
				s.maxIdx = i
				break
			}
		}
	}
}

// FindKey implements ipcns.Table by scanning every slot.
func (s *Slots) FindKey(key int32) *ipcns.Obj {
	for i := range s.slots {
		if o := s.Get(i); o != nil && o.Key == key {
			return o
		}
	}
	return nil
}

// MaxIdx implements ipcns.Table.
func (s *Slots) MaxIdx() int {
	if s.n == 0 {
		return -1
	}
	return s.maxIdx
}

// Len implements ipcns.Table.
func (s *Slots) Len() int { return s.n }

// Listing implements ipcns.Table the way sysvipc_find_ipc() did before 5.15:
// every record first counts the live ids below its position from slot 0,
// then scans forward to the next live slot, up to ipc_mni.
func (s *Slots) Listing() []*ipcns.Obj {
	var out []*ipcns.Obj
	pos := 0
	for {
		o, next := s.findIPC(pos)
		if o == nil {
			return out
		}
		out = append(out, o)
		pos = next
	}
}

func (s *Slots) findIPC(pos int) (*ipcns.Obj, int) {
	total := 0
	for id := 0; id < pos && total < s.n; id++ {
		if s.Get(id) != nil {
			total++
		}
	}
	if total >= s.n {
		return nil, pos + 1
	}
	for ; pos < ops.IPCMNI; pos++ {
		if o := s.Get(pos); o != nil {
			return o, pos + 1
		}
	}
	return nil, pos + 1
}

// CostCounter implements ipcns.Table.
func (s *Slots) CostCounter() string { return "probes" }

// Measure implements ops.Measurer.
func (m *Model) Measure(cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	return ipcns.Measure(m, m.Namespace, cfg, w, n, reps)
}

// Counters implements ipcns.Table.
func (s *Slots) Counters() map[string]int64 { return map[string]int64{"probes": s.probes} }
