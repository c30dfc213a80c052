//go:build linux && amd64

package kernel

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func (n *ns) snapshot() (ops.Snapshot, error) {
	return n.snapshotReading(n.nextIDWritten, false)
}

// snapshotReading takes a snapshot, reading <type>_next_id where read[type]
// is set and taking the -1 of a new namespace elsewhere. The namespaces
// the script's tasks went to (namespaces.go) are read after the worker's,
// their sysctls from the files if files is set.
func (n *ns) snapshotReading(read [len(ops.IPCTypes)]bool, files bool) (ops.Snapshot, error) {
	var s ops.Snapshot
	groups, mine, err := n.taskNamespaces()
	if err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	st, err := n.reader(mine).ipcState(read)
	if err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	s.IDs, s.Rows, s.Queues, s.Sems, s.SemLimits = st.IDs, st.Rows, st.Queues, st.Sems, st.SemLimits
	if s.Shm, err = n.shmSnapshot(); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	if s.Namespaces, err = n.readNamespaces(groups, files); err != nil {
		return s, fmt.Errorf("kernel: snapshot: %w", err)
	}
	return s, nil
}

// allTasks has a bit set for every task.
const allTasks = uint16(1<<ops.NumTasks - 1)

// reader reads the IPC state of the namespace the calling thread is in,
// with its procfs (whose files it opens from that thread). Only the tasks
// of in (bit N for tN) are in that namespace: only their pending calls
// sleep on its objects.
type reader struct {
	proc  *procfs
	tasks *tasks
	in    uint16
}

// reader is the reader of the worker's namespace, in which the tasks of
// in are.
func (n *ns) reader(in uint16) reader { return reader{proc: &n.proc, tasks: n.tasks, in: in} }

// holds reports whether task t is in the reader's namespace.
func (r reader) holds(t int) bool { return r.in&(1<<t) != 0 }

// ipcState is what a namespace shows of its ids, msg and sem.
type ipcState struct {
	IDs       [len(ops.IPCTypes)]ops.TypeState
	Rows      [len(ops.IPCTypes)][]ops.Row
	Queues    []ops.QueueState
	Sems      []ops.SemState
	SemLimits ops.SemLimits
}

// ipcState reads the objects of every type, the queues, the arrays and
// kernel.sem, reading <type>_next_id where read[type] is set.
func (r reader) ipcState(read [len(ops.IPCTypes)]bool) (ipcState, error) {
	var s ipcState
	for _, typ := range ops.IPCTypes {
		if err := r.typeState(&s, typ, read[typ]); err != nil {
			return s, err
		}
	}
	var err error
	if s.Queues, err = r.queues(s.Rows[ops.Msg]); err != nil {
		return s, err
	}
	if s.Sems, err = r.semArrays(s.Rows[ops.Sem]); err != nil {
		return s, err
	}
	if s.SemLimits, err = semLimitsNow(); err != nil {
		return s, err
	}
	return s, nil
}

// typeState reads the objects of typ, its pending <type>_next_id (from the
// file if readNext) and its object limit into s.
func (r reader) typeState(s *ipcState, typ ops.IPCType, readNext bool) error {
	rows, e, err := r.listing(typ)
	if err == nil && e != 0 {
		err = e
	}
	if err != nil {
		return fmt.Errorf("reading /proc/sysvipc/%s: %w", typ, err)
	}
	var objs []ops.Object
	for _, row := range rows {
		objs = append(objs, row.Object(typ))
	}
	if len(rows) > 0 {
		s.Rows[typ] = rows
	}
	next := int64(-1)
	if readNext {
		if next, err = r.proc.readInt("/proc/sys/kernel/" + typ.String() + "_next_id"); err != nil {
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
