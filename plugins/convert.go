package plugins

import (
	"fmt"
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// Conversions between harness/ops and the wire messages. Every X has XToProto
// and XFromProto with XFromProto(XToProto(x)) == x (reflect.DeepEqual: nil and
// empty slices and maps are told apart). The FromProto direction validates
// what a peer sent (narrow integers in range, one TypeState per IPC type) and
// names the offending element in its error; a nil message decodes as the zero
// value.

// OpToProto encodes one operation.
func OpToProto(op ops.Op) *ipcfuzzv1.Op {
	m := &ipcfuzzv1.Op{}
	fillOp(m, op)
	return m
}

func fillOp(m *ipcfuzzv1.Op, op ops.Op) {
	m.Kind = uint32(op.Kind)
	m.Type = uint32(op.Type)
	m.Bind = int64(op.Bind)
	m.ObjHandle = int64(op.Obj.Handle)
	m.ObjId = op.Obj.ID
	m.Key = op.Key
	m.Creat = op.Creat
	m.Excl = op.Excl
	m.Mode = uint32(op.Mode)
	m.Size = op.Size
	m.Value = op.Value
	m.As = op.As
	m.Task = uint32(op.Task)
	m.Att = int64(op.Att)
	m.Cmd = uint32(op.Cmd)
	m.Flags = uint32(op.Flags)
	m.Rows = op.Rows
	m.Mtype = op.Mtype
	m.Fill = uint32(op.Fill)
	m.MsgFlags = uint32(op.MsgFlags)
	m.Mcmd = uint32(op.MCmd)
}

// OpFromProto decodes one operation.
func OpFromProto(m *ipcfuzzv1.Op) (ops.Op, error) {
	if m == nil {
		return ops.Op{}, nil
	}
	if m.Kind > math.MaxUint8 {
		return ops.Op{}, fmt.Errorf("op kind %d out of range", m.Kind)
	}
	if m.Type > math.MaxUint8 {
		return ops.Op{}, fmt.Errorf("op type %d out of range", m.Type)
	}
	if m.Mode > math.MaxUint16 {
		return ops.Op{}, fmt.Errorf("op mode %d out of range", m.Mode)
	}
	bind, err := toInt(m.Bind, "op bind")
	if err != nil {
		return ops.Op{}, err
	}
	handle, err := toInt(m.ObjHandle, "op handle")
	if err != nil {
		return ops.Op{}, err
	}
	att, err := toInt(m.Att, "op attachment")
	if err != nil {
		return ops.Op{}, err
	}
	if m.Task > math.MaxUint8 || m.Cmd > math.MaxUint8 || m.Flags > math.MaxUint8 {
		return ops.Op{}, fmt.Errorf("op task %d, cmd %d or flags %d out of range", m.Task, m.Cmd, m.Flags)
	}
	if m.Fill > math.MaxUint8 || m.MsgFlags > math.MaxUint8 || m.Mcmd > math.MaxUint8 {
		return ops.Op{}, fmt.Errorf("op fill %d, msg flags %d or msgctl command %d out of range", m.Fill, m.MsgFlags, m.Mcmd)
	}
	return ops.Op{
		Mtype:    m.Mtype,
		Fill:     uint8(m.Fill),
		MsgFlags: uint8(m.MsgFlags),
		MCmd:     ops.MsgCmd(m.Mcmd),
		Task:     uint8(m.Task),
		Att:      att,
		Cmd:      ops.ShmCmd(m.Cmd),
		Flags:    uint8(m.Flags),
		Rows:     m.Rows,
		Kind:     ops.Kind(m.Kind),
		Type:     ops.IPCType(m.Type),
		Bind:     bind,
		Obj:      ops.Ref{Handle: handle, ID: m.ObjId},
		Key:      m.Key,
		Creat:    m.Creat,
		Excl:     m.Excl,
		Mode:     uint16(m.Mode),
		Size:     m.Size,
		Value:    m.Value,
		As:       m.As,
	}, nil
}

// OpsToProto encodes a batch of operations.
func OpsToProto(batch []ops.Op) []*ipcfuzzv1.Op {
	out := make([]*ipcfuzzv1.Op, len(batch))
	slab := make([]ipcfuzzv1.Op, len(batch)) // one allocation for the batch
	for i, op := range batch {
		fillOp(&slab[i], op)
		out[i] = &slab[i]
	}
	return out
}

// OpsFromProto decodes a batch of operations. The result is never nil.
func OpsFromProto(ms []*ipcfuzzv1.Op) ([]ops.Op, error) {
	out := make([]ops.Op, len(ms))
	for i, m := range ms {
		op, err := OpFromProto(m)
		if err != nil {
			return nil, fmt.Errorf("op %d of %d: %w", i+1, len(ms), err)
		}
		out[i] = op
	}
	return out, nil
}

// ObjectToProto encodes one object.
func ObjectToProto(o ops.Object) *ipcfuzzv1.Object {
	m := &ipcfuzzv1.Object{}
	fillObject(m, o)
	return m
}

func fillObject(m *ipcfuzzv1.Object, o ops.Object) {
	m.Id, m.Key, m.Mode, m.Owner, m.Size = o.ID, o.Key, uint32(o.Mode), o.Owner, o.Size
}

// objectsToProto encodes a list of objects with one allocation for all.
func objectsToProto(objs []ops.Object) []*ipcfuzzv1.Object {
	out := make([]*ipcfuzzv1.Object, len(objs))
	slab := make([]ipcfuzzv1.Object, len(objs))
	for i, o := range objs {
		fillObject(&slab[i], o)
		out[i] = &slab[i]
	}
	return out
}

// ObjectFromProto decodes one object.
func ObjectFromProto(m *ipcfuzzv1.Object) (ops.Object, error) {
	if m == nil {
		return ops.Object{}, nil
	}
	if m.Mode > math.MaxUint16 {
		return ops.Object{}, fmt.Errorf("object %d: mode %d out of range", m.Id, m.Mode)
	}
	return ops.Object{ID: m.Id, Key: m.Key, Mode: uint16(m.Mode), Owner: m.Owner, Size: m.Size}, nil
}

// ResultToProto encodes the result of one operation. A zero Obj is left out.
func ResultToProto(r ops.Result) *ipcfuzzv1.Result {
	m := &ipcfuzzv1.Result{}
	fillResult(m, r)
	return m
}

func fillResult(m *ipcfuzzv1.Result, r ops.Result) {
	m.Err, m.Id = uint32(r.Err), r.ID
	if r.Obj != (ops.Object{}) {
		m.Obj = ObjectToProto(r.Obj)
	}
	if r.Row != (ops.Row{}) {
		m.Row = RowToProto(r.Row)
	}
	if r.Info != (ops.ShmInfo{}) {
		m.Info = shmInfoToProto(r.Info)
	}
	if r.Rows != nil {
		m.Rows, m.RowsEmpty = rowsToProto(r.Rows), len(r.Rows) == 0
	}
	m.Blocked, m.Qbytes, m.Alternatives = r.Blocked, r.Qbytes, int32(r.Alternatives)
	if r.Msg != (ops.Message{}) {
		m.Msg = messageToProto(r.Msg)
	}
	if r.MsgInfo != (ops.MsgInfo{}) {
		i := r.MsgInfo
		m.MsgInfo = &ipcfuzzv1.MsgInfo{Msgpool: i.Msgpool, Msgmap: i.Msgmap, Msgmax: i.Msgmax, Msgmnb: i.Msgmnb,
			Msgmni: i.Msgmni, Msgssz: i.Msgssz, Msgtql: i.Msgtql, Msgseg: i.Msgseg}
	}
	if r.Done != nil {
		m.Done, m.DoneEmpty = make([]*ipcfuzzv1.Completion, len(r.Done)), len(r.Done) == 0
		for i, c := range r.Done {
			m.Done[i] = &ipcfuzzv1.Completion{Task: uint32(c.Task), Err: uint32(c.Err), Recv: c.Recv}
			if c.Msg != (ops.Message{}) {
				m.Done[i].Msg = messageToProto(c.Msg)
			}
		}
	}
	if r.List != nil {
		m.List = make([]*ipcfuzzv1.Entry, len(r.List))
		slab := make([]ipcfuzzv1.Entry, len(r.List))
		for i, e := range r.List {
			slab[i].Id, slab[i].Key = e.ID, e.Key
			m.List[i] = &slab[i]
		}
		m.ListEmpty = len(r.List) == 0
	}
}

// ResultFromProto decodes the result of one operation.
func ResultFromProto(m *ipcfuzzv1.Result) (ops.Result, error) {
	if m == nil {
		return ops.Result{}, nil
	}
	if m.Err > math.MaxUint16 {
		return ops.Result{}, fmt.Errorf("errno %d out of range", m.Err)
	}
	obj, err := ObjectFromProto(m.Obj)
	if err != nil {
		return ops.Result{}, err
	}
	r := ops.Result{Err: ops.Errno(m.Err), ID: m.Id, Obj: obj, Info: shmInfoFromProto(m.Info)}
	if r.Row, err = RowFromProto(m.Row); err != nil {
		return ops.Result{}, err
	}
	if r.Rows, err = rowsFromProto(m.Rows, m.RowsEmpty); err != nil {
		return ops.Result{}, err
	}
	if len(m.List) > 0 || m.ListEmpty {
		r.List = make([]ops.Entry, len(m.List))
		for i, e := range m.List {
			if e != nil {
				r.List[i] = ops.Entry{ID: e.Id, Key: e.Key}
			}
		}
	}
	r.Blocked, r.Qbytes, r.Msg, r.Alternatives = m.Blocked, m.Qbytes, messageFromProto(m.Msg), int(m.Alternatives)
	if i := m.MsgInfo; i != nil {
		r.MsgInfo = ops.MsgInfo{Msgpool: i.Msgpool, Msgmap: i.Msgmap, Msgmax: i.Msgmax, Msgmnb: i.Msgmnb,
			Msgmni: i.Msgmni, Msgssz: i.Msgssz, Msgtql: i.Msgtql, Msgseg: i.Msgseg}
	}
	if len(m.Done) > 0 || m.DoneEmpty {
		r.Done = make([]ops.Completion, len(m.Done))
		for i, c := range m.Done {
			if c.GetTask() > math.MaxUint8 || c.GetErr() > math.MaxUint16 {
				return ops.Result{}, fmt.Errorf("completion task %d or errno %d out of range", c.GetTask(), c.GetErr())
			}
			r.Done[i] = ops.Completion{Task: uint8(c.GetTask()), Err: ops.Errno(c.GetErr()), Msg: messageFromProto(c.GetMsg()), Recv: c.GetRecv()}
		}
	}
	return r, nil
}

func messageToProto(msg ops.Message) *ipcfuzzv1.Message {
	return &ipcfuzzv1.Message{Type: msg.Type, Text: []byte(msg.Text)}
}

func messageFromProto(m *ipcfuzzv1.Message) ops.Message {
	if m == nil {
		return ops.Message{}
	}
	return ops.Message{Type: m.Type, Text: string(m.Text)}
}

func queuesToProto(qs []ops.QueueState) []*ipcfuzzv1.QueueState {
	out := make([]*ipcfuzzv1.QueueState, len(qs))
	for i, q := range qs {
		mq := &ipcfuzzv1.QueueState{Id: q.ID, Qbytes: q.Qbytes, Senders: q.Senders, Receivers: q.Receivers}
		if q.Msgs != nil {
			mq.MsgsEmpty = len(q.Msgs) == 0
			for _, msg := range q.Msgs {
				mq.Msgs = append(mq.Msgs, messageToProto(msg))
			}
		}
		out[i] = mq
	}
	return out
}

func queuesFromProto(ms []*ipcfuzzv1.QueueState) []ops.QueueState {
	out := make([]ops.QueueState, len(ms))
	for i, m := range ms {
		q := ops.QueueState{ID: m.GetId(), Qbytes: m.GetQbytes()}
		if len(m.GetSenders()) > 0 {
			q.Senders = append([]uint8(nil), m.GetSenders()...)
		}
		if len(m.GetReceivers()) > 0 {
			q.Receivers = append([]uint8(nil), m.GetReceivers()...)
		}
		if len(m.GetMsgs()) > 0 || m.GetMsgsEmpty() {
			q.Msgs = make([]ops.Message, len(m.GetMsgs()))
			for j, mm := range m.GetMsgs() {
				q.Msgs[j] = messageFromProto(mm)
			}
		}
		out[i] = q
	}
	return out
}

// ResultsToProto encodes the results of a batch; empty reports whether rs is
// non-nil and empty (the *_empty flag of the enclosing message).
func ResultsToProto(rs []ops.Result) (ms []*ipcfuzzv1.Result, empty bool) {
	if rs == nil {
		return nil, false
	}
	ms = make([]*ipcfuzzv1.Result, len(rs))
	slab := make([]ipcfuzzv1.Result, len(rs)) // one allocation for the batch
	for i, r := range rs {
		fillResult(&slab[i], r)
		ms[i] = &slab[i]
	}
	return ms, len(rs) == 0
}

// ResultsFromProto decodes the results of a batch; empty is the *_empty flag
// of the enclosing message.
func ResultsFromProto(ms []*ipcfuzzv1.Result, empty bool) ([]ops.Result, error) {
	if len(ms) == 0 && !empty {
		return nil, nil
	}
	out := make([]ops.Result, len(ms))
	for i, m := range ms {
		r, err := ResultFromProto(m)
		if err != nil {
			return nil, fmt.Errorf("result %d of %d: %w", i+1, len(ms), err)
		}
		out[i] = r
	}
	return out, nil
}

// SnapshotToProto encodes a snapshot.
func SnapshotToProto(s ops.Snapshot) *ipcfuzzv1.Snapshot {
	m := &ipcfuzzv1.Snapshot{Ids: make([]*ipcfuzzv1.TypeState, len(s.IDs))}
	for i, ts := range s.IDs {
		mt := &ipcfuzzv1.TypeState{NextId: ts.NextID, Limit: ts.Limit}
		if ts.Objects != nil {
			mt.Objects = objectsToProto(ts.Objects)
			mt.ObjectsEmpty = len(ts.Objects) == 0
		}
		if rows := s.Rows[i]; rows != nil {
			mt.Rows, mt.RowsEmpty = rowsToProto(rows), len(rows) == 0
		}
		m.Ids[i] = mt
	}
	if s.Queues != nil {
		m.Queues, m.QueuesEmpty = queuesToProto(s.Queues), len(s.Queues) == 0
	}
	m.Shm = &ipcfuzzv1.ShmState{RmidForced: s.Shm.RmidForced, Tot: s.Shm.Tot}
	if as := s.Shm.Attachments; as != nil {
		m.Shm.AttachmentsEmpty = len(as) == 0
		m.Shm.Attachments = make([]*ipcfuzzv1.Attachment, len(as))
		for i, a := range as {
			m.Shm.Attachments[i] = &ipcfuzzv1.Attachment{Att: int64(a.Att), Task: int32(a.Task), Id: a.ID}
		}
	}
	return m
}

// RowToProto encodes one row.
func RowToProto(r ops.Row) *ipcfuzzv1.Row {
	m := &ipcfuzzv1.Row{}
	fillRow(m, r)
	return m
}

func fillRow(m *ipcfuzzv1.Row, r ops.Row) {
	*m = ipcfuzzv1.Row{
		Key: r.Key, Id: r.ID, Mode: uint32(r.Mode), Size: r.Size, Qnum: r.Qnum,
		Cpid: int32(r.Cpid), Lpid: int32(r.Lpid), Nattch: r.Nattch,
		Uid: r.UID, Gid: r.GID, Cuid: r.CUID, Cgid: r.CGID,
		Atime: r.Atime, Dtime: r.Dtime, Ctime: r.Ctime, Rss: r.RSS, Swap: r.Swap,
	}
}

// RowFromProto decodes one row; nil is the zero row.
func RowFromProto(m *ipcfuzzv1.Row) (ops.Row, error) {
	if m == nil {
		return ops.Row{}, nil
	}
	if m.Mode > math.MaxUint16 {
		return ops.Row{}, fmt.Errorf("row %d: mode %d out of range", m.Id, m.Mode)
	}
	return ops.Row{
		Key: m.Key, ID: m.Id, Mode: uint16(m.Mode), Size: m.Size, Qnum: m.Qnum,
		Cpid: ops.PID(m.Cpid), Lpid: ops.PID(m.Lpid), Nattch: m.Nattch,
		UID: m.Uid, GID: m.Gid, CUID: m.Cuid, CGID: m.Cgid,
		Atime: m.Atime, Dtime: m.Dtime, Ctime: m.Ctime, RSS: m.Rss, Swap: m.Swap,
	}, nil
}

func rowsToProto(rows []ops.Row) []*ipcfuzzv1.Row {
	out := make([]*ipcfuzzv1.Row, len(rows))
	slab := make([]ipcfuzzv1.Row, len(rows))
	for i, r := range rows {
		fillRow(&slab[i], r)
		out[i] = &slab[i]
	}
	return out
}

func rowsFromProto(ms []*ipcfuzzv1.Row, empty bool) ([]ops.Row, error) {
	if len(ms) == 0 && !empty {
		return nil, nil
	}
	out := make([]ops.Row, len(ms))
	for i, m := range ms {
		r, err := RowFromProto(m)
		if err != nil {
			return nil, fmt.Errorf("row %d of %d: %w", i+1, len(ms), err)
		}
		out[i] = r
	}
	return out, nil
}

func shmInfoToProto(in ops.ShmInfo) *ipcfuzzv1.ShmInfo {
	return &ipcfuzzv1.ShmInfo{
		Shmmax: in.Shmmax, Shmmin: in.Shmmin, Shmmni: in.Shmmni, Shmseg: in.Shmseg, Shmall: in.Shmall,
		UsedIds: in.UsedIDs, ShmTot: in.ShmTot, ShmRss: in.ShmRss, ShmSwp: in.ShmSwp,
		SwapAttempts: in.SwapAttempts, SwapSuccesses: in.SwapSuccesses,
	}
}

func shmInfoFromProto(m *ipcfuzzv1.ShmInfo) ops.ShmInfo {
	if m == nil {
		return ops.ShmInfo{}
	}
	return ops.ShmInfo{
		Shmmax: m.Shmmax, Shmmin: m.Shmmin, Shmmni: m.Shmmni, Shmseg: m.Shmseg, Shmall: m.Shmall,
		UsedIDs: m.UsedIds, ShmTot: m.ShmTot, ShmRss: m.ShmRss, ShmSwp: m.ShmSwp,
		SwapAttempts: m.SwapAttempts, SwapSuccesses: m.SwapSuccesses,
	}
}

// SnapshotFromProto decodes a snapshot. It must hold exactly one TypeState per
// IPC type.
func SnapshotFromProto(m *ipcfuzzv1.Snapshot) (ops.Snapshot, error) {
	var s ops.Snapshot
	if m == nil {
		return s, fmt.Errorf("snapshot missing")
	}
	if len(m.Ids) != len(s.IDs) {
		return s, fmt.Errorf("snapshot has %d IPC types, want %d", len(m.Ids), len(s.IDs))
	}
	for i, mt := range m.Ids {
		if mt == nil {
			continue
		}
		ts := ops.TypeState{NextID: mt.NextId, Limit: mt.Limit}
		rows, err := rowsFromProto(mt.Rows, mt.RowsEmpty)
		if err != nil {
			return s, fmt.Errorf("snapshot of %s: %w", ops.IPCTypes[i], err)
		}
		s.Rows[i] = rows
		if len(mt.Objects) > 0 || mt.ObjectsEmpty {
			ts.Objects = make([]ops.Object, len(mt.Objects))
			for j, mo := range mt.Objects {
				o, err := ObjectFromProto(mo)
				if err != nil {
					return s, fmt.Errorf("snapshot of %s: %w", ops.IPCTypes[i], err)
				}
				ts.Objects[j] = o
			}
		}
		s.IDs[i] = ts
	}
	if len(m.Queues) > 0 || m.QueuesEmpty {
		s.Queues = queuesFromProto(m.Queues)
	}
	if sh := m.Shm; sh != nil {
		s.Shm = ops.ShmState{RmidForced: sh.RmidForced, Tot: sh.Tot}
		if len(sh.Attachments) > 0 || sh.AttachmentsEmpty {
			s.Shm.Attachments = make([]ops.Attachment, len(sh.Attachments))
			for i, a := range sh.Attachments {
				att, err := toInt(a.GetAtt(), "attachment handle")
				if err != nil {
					return s, err
				}
				s.Shm.Attachments[i] = ops.Attachment{Att: att, Task: ops.PID(a.GetTask()), ID: a.GetId()}
			}
		}
	}
	return s, nil
}

// InfoToProto encodes the description of an implementation.
func InfoToProto(info ops.Info) *ipcfuzzv1.Info {
	return &ipcfuzzv1.Info{
		Name:            info.Name,
		Version:         info.Version,
		Subsystems:      info.Subsystems,
		SubsystemsEmpty: info.Subsystems != nil && len(info.Subsystems) == 0,
		ExactIds:        info.ExactIDs,
		Blocking:        info.Blocking,
		Counters:        info.Counters,
		Follows:         info.Follows,
	}
}

// InfoFromProto decodes the description of an implementation.
func InfoFromProto(m *ipcfuzzv1.Info) (ops.Info, error) {
	if m == nil {
		return ops.Info{}, fmt.Errorf("info missing")
	}
	info := ops.Info{
		Name:     m.Name,
		Version:  m.Version,
		ExactIDs: m.ExactIds,
		Blocking: m.Blocking,
		Counters: m.Counters,
		Follows:  m.Follows,
	}
	if len(m.Subsystems) > 0 || m.SubsystemsEmpty {
		info.Subsystems = append(make([]string, 0, len(m.Subsystems)), m.Subsystems...)
	}
	return info, nil
}

// ConfigToProto encodes a configuration.
func ConfigToProto(cfg ops.Config) *ipcfuzzv1.Config {
	m := &ipcfuzzv1.Config{OptionsEmpty: cfg.Options != nil && len(cfg.Options) == 0}
	if len(cfg.Options) > 0 {
		m.Options = make(map[string]string, len(cfg.Options))
		for k, v := range cfg.Options {
			m.Options[k] = v
		}
	}
	return m
}

// ConfigFromProto decodes a configuration.
func ConfigFromProto(m *ipcfuzzv1.Config) ops.Config {
	var cfg ops.Config
	if m == nil {
		return cfg
	}
	if len(m.Options) > 0 || m.OptionsEmpty {
		cfg.Options = make(map[string]string, len(m.Options))
		for k, v := range m.Options {
			cfg.Options[k] = v
		}
	}
	return cfg
}

// OutcomeToProto encodes what one script did.
func OutcomeToProto(o ops.Outcome) *ipcfuzzv1.Outcome {
	return &ipcfuzzv1.Outcome{Results: PackResults(o.Results), Snapshot: PackSnapshot(o.Snapshot)}
}

// OutcomeFromProto decodes what one script did.
func OutcomeFromProto(m *ipcfuzzv1.Outcome) (ops.Outcome, error) {
	if m == nil {
		return ops.Outcome{}, fmt.Errorf("outcome missing")
	}
	rs, err := UnpackResults(m.Results)
	if err != nil {
		return ops.Outcome{}, err
	}
	snap, err := UnpackSnapshot(m.Snapshot)
	if err != nil {
		return ops.Outcome{}, err
	}
	return ops.Outcome{Results: rs, Snapshot: snap}, nil
}

// OutcomesToProto encodes the outcomes of an Exec; empty reports whether outs
// is non-nil and empty.
func OutcomesToProto(outs []ops.Outcome) (ms []*ipcfuzzv1.Outcome, empty bool) {
	if outs == nil {
		return nil, false
	}
	ms = make([]*ipcfuzzv1.Outcome, len(outs))
	for i, o := range outs {
		ms[i] = OutcomeToProto(o)
	}
	return ms, len(outs) == 0
}

// OutcomesFromProto decodes the outcomes of an Exec; empty is the *_empty flag
// of the enclosing message.
func OutcomesFromProto(ms []*ipcfuzzv1.Outcome, empty bool) ([]ops.Outcome, error) {
	if len(ms) == 0 && !empty {
		return nil, nil
	}
	out := make([]ops.Outcome, len(ms))
	for i, m := range ms {
		o, err := OutcomeFromProto(m)
		if err != nil {
			return nil, fmt.Errorf("outcome %d of %d: %w", i+1, len(ms), err)
		}
		out[i] = o
	}
	return out, nil
}

// ScriptsToProto encodes the scripts of an Exec.
func ScriptsToProto(scripts [][]ops.Op) []*ipcfuzzv1.Script {
	out := make([]*ipcfuzzv1.Script, len(scripts))
	for i, s := range scripts {
		out[i] = &ipcfuzzv1.Script{Ops: PackOps(s)}
	}
	return out
}

// ScriptsFromProto decodes the scripts of an Exec. The scripts are never nil.
func ScriptsFromProto(ms []*ipcfuzzv1.Script) ([][]ops.Op, error) {
	out := make([][]ops.Op, len(ms))
	for i, m := range ms {
		s, err := UnpackOps(m.GetOps())
		if err != nil {
			return nil, fmt.Errorf("script %d of %d: %w", i+1, len(ms), err)
		}
		out[i] = s
	}
	return out, nil
}

func toInt(v int64, what string) (int, error) {
	if int64(int(v)) != v {
		return 0, fmt.Errorf("%s %d out of range", what, v)
	}
	return int(v), nil
}
