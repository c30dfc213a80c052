//go:build linux && amd64

package kernel

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func (n *ns) snapshot() (ops.Snapshot, error) {
	return n.snapshotReading(n.nextIDWritten)
}

// snapshotReading takes a snapshot, reading <type>_next_id where read[type]
// is set and taking the -1 of a new namespace elsewhere.
func (n *ns) snapshotReading(read [len(ops.IPCTypes)]bool) (ops.Snapshot, error) {
	var s ops.Snapshot
	for _, typ := range ops.IPCTypes {
		if err := n.typeState(&s, typ, read[typ]); err != nil {
			return s, fmt.Errorf("kernel: snapshot: %w", err)
		}
	}
	var err error
	if s.Queues, err = n.queues(s.Rows[ops.Msg]); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.Shm, err = n.shmSnapshot(); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.Sems, err = n.semArrays(s.Rows[ops.Sem]); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.SemLimits, err = semLimitsNow(); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	return s, nil
}

// typeState reads the objects of typ, its pending <type>_next_id (from the
// file if readNext) and its object limit into s.
func (n *ns) typeState(s *ops.Snapshot, typ ops.IPCType, readNext bool) error {
	rows, e, err := n.listing(typ)
	if err == nil && e != 0 {
		err = e
	}
	if err != nil {
		return fmt.Errorf("reading /proc/sysvipc/%s: %w", typ, err)
	}
	var objs []ops.Object
	for _, r := range rows {
		objs = append(objs, r.Object(typ))
	}
	if len(rows) > 0 {
		s.Rows[typ] = rows
	}
	next := int64(-1)
	if readNext {
		if next, err = n.proc.readInt("/proc/sys/kernel/" + typ.String() + "_next_id"); err != nil {
			return err
		}
	}
	limit, maxIdx, e := ipcLimits(typ)
	if e != 0 {
		return fmt.Errorf("%s IPC_INFO: %w", typ, e)
	}
	s.IDs[typ] = ops.TypeState{Objects: objs, NextID: next, Limit: limit, MaxIdx: maxIdx}
	return nil
}
