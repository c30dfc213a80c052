package plugins

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The scripts and results of Exec, the hot path, travel packed: one bytes
// field per script or outcome instead of a message per operation, which cut
// the wire's cost per operation (protobuf decoding allocated five objects an
// operation). The layout is a sequence of varints; a result starts with a
// mask of the parts it has, so the usual result costs a few bytes.

type packer struct{ b []byte }

func (p *packer) u(v uint64) { p.b = binary.AppendUvarint(p.b, v) }
func (p *packer) i(v int64)  { p.b = binary.AppendVarint(p.b, v) }
func (p *packer) s(v string) {
	p.u(uint64(len(v)))
	p.b = append(p.b, v...)
}

type unpacker struct {
	b   []byte
	err error
}

var errShort = errors.New("packed data ends early")

func (p *unpacker) u() uint64 {
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.fail()
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *unpacker) i() int64 {
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.fail()
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *unpacker) s() string {
	n := p.u()
	if n > uint64(len(p.b)) {
		p.fail()
		return ""
	}
	v := string(p.b[:n])
	p.b = p.b[n:]
	return v
}

// small reads a value that must fit in max.
func (p *unpacker) small(max uint64) uint64 {
	v := p.u()
	if v > max {
		p.fail()
		return 0
	}
	return v
}

func (p *unpacker) count() int {
	n := p.u()
	if n > uint64(len(p.b)) { // every element takes at least a byte
		p.fail()
		return 0
	}
	return int(n)
}

func (p *unpacker) fail() {
	if p.err == nil {
		p.err = errShort
	}
	p.b = nil
}

// PackOps encodes a script.
func PackOps(script []ops.Op) []byte {
	p := &packer{b: make([]byte, 0, 24*len(script)+4)}
	p.u(uint64(len(script)))
	for _, op := range script {
		p.u(uint64(op.Kind))
		p.u(uint64(op.Type))
		p.i(int64(op.Bind))
		p.i(int64(op.Obj.Handle))
		p.i(op.Obj.ID)
		p.i(int64(op.Key))
		var bits uint64
		for i, b := range []bool{op.Creat, op.Excl, op.Rows} {
			if b {
				bits |= 1 << i
			}
		}
		p.u(bits)
		p.u(uint64(op.Mode))
		p.i(op.Size)
		p.i(op.Value)
		p.u(uint64(op.As))
		p.u(uint64(op.Task))
		p.i(int64(op.Att))
		p.u(uint64(op.Cmd))
		p.u(uint64(op.Flags))
		p.i(op.Mtype)
		p.u(uint64(op.Fill))
		p.u(uint64(op.MsgFlags))
		p.u(uint64(op.MCmd))
	}
	return p.b
}

// UnpackOps decodes what PackOps wrote. The result is never nil.
func UnpackOps(b []byte) ([]ops.Op, error) {
	p := &unpacker{b: b}
	out := make([]ops.Op, p.count())
	for i := range out {
		op := &out[i]
		op.Kind = ops.Kind(p.small(255))
		op.Type = ops.IPCType(p.small(255))
		op.Bind = int(p.i())
		op.Obj.Handle = int(p.i())
		op.Obj.ID = p.i()
		op.Key = int32(p.i())
		bits := p.u()
		op.Creat, op.Excl, op.Rows = bits&1 != 0, bits&2 != 0, bits&4 != 0
		op.Mode = uint16(p.small(0xffff))
		op.Size = p.i()
		op.Value = p.i()
		op.As = uint32(p.small(0xffffffff))
		op.Task = uint8(p.small(255))
		op.Att = int(p.i())
		op.Cmd = ops.ShmCmd(p.small(255))
		op.Flags = uint8(p.small(255))
		op.Mtype = p.i()
		op.Fill = uint8(p.small(255))
		op.MsgFlags = uint8(p.small(255))
		op.MCmd = ops.MsgCmd(p.small(255))
	}
	return out, p.done("operations")
}

func (p *unpacker) done(what string) error {
	if p.err == nil && len(p.b) != 0 {
		p.err = fmt.Errorf("%d bytes left after the %s", len(p.b), what)
	}
	if p.err != nil {
		return fmt.Errorf("packed %s: %w", what, p.err)
	}
	return nil
}

// The parts of a packed result.
const (
	hasErr = 1 << iota
	hasID
	hasObj
	hasList
	hasRow
	hasRows
	hasInfo
	hasBlocked
	hasMsg
	hasQbytes
	hasMsgInfo
	hasDone
	hasAlternatives
)

func (p *packer) row(r ops.Row) {
	p.i(int64(r.Key))
	p.i(r.ID)
	p.u(uint64(r.Mode))
	p.i(r.Size)
	p.i(r.Qnum)
	p.i(int64(r.Cpid))
	p.i(int64(r.Lpid))
	p.i(r.Nattch)
	for _, v := range []uint32{r.UID, r.GID, r.CUID, r.CGID} {
		p.u(uint64(v))
	}
	var bits uint64
	for i, b := range []bool{r.Atime, r.Dtime, r.Ctime} {
		if b {
			bits |= 1 << i
		}
	}
	p.u(bits)
	p.i(r.RSS)
	p.i(r.Swap)
}

func (p *unpacker) row() ops.Row {
	var r ops.Row
	r.Key = int32(p.i())
	r.ID = p.i()
	r.Mode = uint16(p.small(0xffff))
	r.Size = p.i()
	r.Qnum = p.i()
	r.Cpid = ops.PID(p.i())
	r.Lpid = ops.PID(p.i())
	r.Nattch = p.i()
	for _, v := range []*uint32{&r.UID, &r.GID, &r.CUID, &r.CGID} {
		*v = uint32(p.small(0xffffffff))
	}
	bits := p.u()
	r.Atime, r.Dtime, r.Ctime = bits&1 != 0, bits&2 != 0, bits&4 != 0
	r.RSS = p.i()
	r.Swap = p.i()
	return r
}

// PackResults encodes the results of a script (nil and empty differ).
func PackResults(rs []ops.Result) []byte {
	p := &packer{b: make([]byte, 0, 4*len(rs)+4)}
	if rs == nil {
		p.u(0)
		return p.b
	}
	p.u(uint64(len(rs)) + 1)
	for _, r := range rs {
		var mask uint64
		set := func(bit uint64, on bool) {
			if on {
				mask |= bit
			}
		}
		set(hasErr, r.Err != ops.OK)
		set(hasID, r.ID != 0)
		set(hasObj, r.Obj != ops.Object{})
		set(hasList, r.List != nil)
		set(hasRow, r.Row != ops.Row{})
		set(hasRows, r.Rows != nil)
		set(hasInfo, r.Info != ops.ShmInfo{})
		set(hasBlocked, r.Blocked)
		set(hasMsg, r.Msg != ops.Message{})
		set(hasQbytes, r.Qbytes != 0)
		set(hasMsgInfo, r.MsgInfo != ops.MsgInfo{})
		set(hasDone, r.Done != nil)
		set(hasAlternatives, r.Alternatives != 0)
		p.u(mask)
		if mask&hasErr != 0 {
			p.u(uint64(r.Err))
		}
		if mask&hasID != 0 {
			p.i(r.ID)
		}
		if mask&hasObj != 0 {
			p.i(r.Obj.ID)
			p.i(int64(r.Obj.Key))
			p.u(uint64(r.Obj.Mode))
			p.u(uint64(r.Obj.Owner))
			p.i(r.Obj.Size)
		}
		if mask&hasList != 0 {
			p.u(uint64(len(r.List)))
			for _, e := range r.List {
				p.i(e.ID)
				p.i(int64(e.Key))
			}
		}
		if mask&hasRow != 0 {
			p.row(r.Row)
		}
		if mask&hasRows != 0 {
			p.u(uint64(len(r.Rows)))
			for _, row := range r.Rows {
				p.row(row)
			}
		}
		if mask&hasInfo != 0 {
			in := r.Info
			for _, v := range []uint64{in.Shmmax, in.Shmmin, in.Shmmni, in.Shmseg, in.Shmall} {
				p.u(v)
			}
			for _, v := range []int64{in.UsedIDs, in.ShmTot, in.ShmRss, in.ShmSwp, in.SwapAttempts, in.SwapSuccesses} {
				p.i(v)
			}
		}
		if mask&hasMsg != 0 {
			p.i(r.Msg.Type)
			p.s(r.Msg.Text)
		}
		if mask&hasQbytes != 0 {
			p.i(r.Qbytes)
		}
		if mask&hasMsgInfo != 0 {
			in := r.MsgInfo
			for _, v := range []int64{in.Msgpool, in.Msgmap, in.Msgmax, in.Msgmnb, in.Msgmni, in.Msgssz, in.Msgtql, in.Msgseg} {
				p.i(v)
			}
		}
		if mask&hasDone != 0 {
			p.u(uint64(len(r.Done)))
			for _, c := range r.Done {
				p.u(uint64(c.Task))
				p.u(uint64(c.Err))
				p.i(c.Msg.Type)
				p.s(c.Msg.Text)
				if c.Recv {
					p.u(1)
				} else {
					p.u(0)
				}
			}
		}
		if mask&hasAlternatives != 0 {
			p.i(int64(r.Alternatives))
		}
	}
	return p.b
}

// UnpackResults decodes what PackResults wrote.
func UnpackResults(b []byte) ([]ops.Result, error) {
	p := &unpacker{b: b}
	n := p.u()
	if n == 0 {
		return nil, p.done("results")
	}
	if n-1 > uint64(len(p.b)) {
		p.fail()
		return nil, p.done("results")
	}
	out := make([]ops.Result, n-1)
	for i := range out {
		r := &out[i]
		mask := p.u()
		if mask&hasErr != 0 {
			r.Err = ops.Errno(p.small(0xffff))
		}
		if mask&hasID != 0 {
			r.ID = p.i()
		}
		if mask&hasObj != 0 {
			r.Obj.ID = p.i()
			r.Obj.Key = int32(p.i())
			r.Obj.Mode = uint16(p.small(0xffff))
			r.Obj.Owner = uint32(p.small(0xffffffff))
			r.Obj.Size = p.i()
		}
		if mask&hasList != 0 {
			r.List = make([]ops.Entry, p.count())
			for j := range r.List {
				r.List[j] = ops.Entry{ID: p.i(), Key: int32(p.i())}
			}
		}
		if mask&hasRow != 0 {
			r.Row = p.row()
		}
		if mask&hasRows != 0 {
			r.Rows = make([]ops.Row, p.count())
			for j := range r.Rows {
				r.Rows[j] = p.row()
			}
		}
		if mask&hasInfo != 0 {
			in := &r.Info
			for _, v := range []*uint64{&in.Shmmax, &in.Shmmin, &in.Shmmni, &in.Shmseg, &in.Shmall} {
				*v = p.u()
			}
			for _, v := range []*int64{&in.UsedIDs, &in.ShmTot, &in.ShmRss, &in.ShmSwp, &in.SwapAttempts, &in.SwapSuccesses} {
				*v = p.i()
			}
		}
		r.Blocked = mask&hasBlocked != 0
		if mask&hasMsg != 0 {
			r.Msg.Type = p.i()
			r.Msg.Text = p.s()
		}
		if mask&hasQbytes != 0 {
			r.Qbytes = p.i()
		}
		if mask&hasMsgInfo != 0 {
			in := &r.MsgInfo
			for _, v := range []*int64{&in.Msgpool, &in.Msgmap, &in.Msgmax, &in.Msgmnb, &in.Msgmni, &in.Msgssz, &in.Msgtql, &in.Msgseg} {
				*v = p.i()
			}
		}
		if mask&hasDone != 0 {
			r.Done = make([]ops.Completion, p.count())
			for j := range r.Done {
				c := &r.Done[j]
				c.Task = uint8(p.small(255))
				c.Err = ops.Errno(p.small(0xffff))
				c.Msg.Type = p.i()
				c.Msg.Text = p.s()
				c.Recv = p.small(1) == 1
			}
		}
		if mask&hasAlternatives != 0 {
			r.Alternatives = int(p.i())
		}
		if p.err != nil {
			break
		}
	}
	return out, p.done("results")
}

func (p *packer) objects(objs []ops.Object) {
	if objs == nil {
		p.u(0)
		return
	}
	p.u(uint64(len(objs)) + 1)
	for _, o := range objs {
		p.i(o.ID)
		p.i(int64(o.Key))
		p.u(uint64(o.Mode))
		p.u(uint64(o.Owner))
		p.i(o.Size)
	}
}

func (p *unpacker) objects() []ops.Object {
	n := p.u()
	if n == 0 {
		return nil
	}
	if n-1 > uint64(len(p.b)) {
		p.fail()
		return nil
	}
	out := make([]ops.Object, n-1)
	for i := range out {
		o := &out[i]
		o.ID = p.i()
		o.Key = int32(p.i())
		o.Mode = uint16(p.small(0xffff))
		o.Owner = uint32(p.small(0xffffffff))
		o.Size = p.i()
	}
	return out
}

// nilOrLen writes a slice's length, 0 for nil and len+1 otherwise.
func (p *packer) nilOrLen(isNil bool, n int) {
	if isNil {
		p.u(0)
		return
	}
	p.u(uint64(n) + 1)
}

// nilOrLen reads what packer.nilOrLen wrote: -1 for nil.
func (p *unpacker) nilOrLen() int {
	n := p.u()
	if n == 0 {
		return -1
	}
	if n-1 > uint64(len(p.b)) {
		p.fail()
		return -1
	}
	return int(n - 1)
}

func (p *packer) tasks(ts []uint8) {
	p.u(uint64(len(ts)))
	p.b = append(p.b, ts...)
}

func (p *unpacker) tasks() []uint8 {
	n := p.count()
	if n == 0 {
		return nil
	}
	ts := append([]uint8(nil), p.b[:n]...)
	p.b = p.b[n:]
	return ts
}

// PackSnapshot encodes a snapshot for Exec's outcomes.
func PackSnapshot(s ops.Snapshot) []byte {
	p := &packer{}
	for i, ts := range s.IDs {
		p.objects(ts.Objects)
		p.i(ts.NextID)
		p.i(ts.Limit)
		p.nilOrLen(s.Rows[i] == nil, len(s.Rows[i]))
		for _, r := range s.Rows[i] {
			p.row(r)
		}
	}
	p.i(s.Shm.RmidForced)
	p.i(s.Shm.Tot)
	p.nilOrLen(s.Shm.Attachments == nil, len(s.Shm.Attachments))
	for _, a := range s.Shm.Attachments {
		p.i(int64(a.Att))
		p.i(int64(a.Task))
		p.i(a.ID)
	}
	p.nilOrLen(s.Queues == nil, len(s.Queues))
	for _, q := range s.Queues {
		p.i(q.ID)
		p.i(q.Qbytes)
		p.nilOrLen(q.Msgs == nil, len(q.Msgs))
		for _, m := range q.Msgs {
			p.i(m.Type)
			p.s(m.Text)
		}
		p.tasks(q.Senders)
		p.tasks(q.Receivers)
	}
	return p.b
}

// UnpackSnapshot decodes what PackSnapshot wrote.
func UnpackSnapshot(b []byte) (ops.Snapshot, error) {
	var s ops.Snapshot
	p := &unpacker{b: b}
	for i := range s.IDs {
		ts := &s.IDs[i]
		ts.Objects = p.objects()
		ts.NextID = p.i()
		ts.Limit = p.i()
		if n := p.nilOrLen(); n >= 0 {
			s.Rows[i] = make([]ops.Row, n)
			for j := range s.Rows[i] {
				s.Rows[i][j] = p.row()
			}
		}
	}
	s.Shm.RmidForced = p.i()
	s.Shm.Tot = p.i()
	if n := p.nilOrLen(); n >= 0 {
		s.Shm.Attachments = make([]ops.Attachment, n)
		for j := range s.Shm.Attachments {
			s.Shm.Attachments[j] = ops.Attachment{Att: int(p.i()), Task: ops.PID(p.i()), ID: p.i()}
		}
	}
	if n := p.nilOrLen(); n >= 0 {
		s.Queues = make([]ops.QueueState, n)
		for j := range s.Queues {
			q := &s.Queues[j]
			q.ID = p.i()
			q.Qbytes = p.i()
			if m := p.nilOrLen(); m >= 0 {
				q.Msgs = make([]ops.Message, m)
				for k := range q.Msgs {
					q.Msgs[k] = ops.Message{Type: p.i(), Text: p.s()}
				}
			}
			q.Senders = p.tasks()
			q.Receivers = p.tasks()
		}
	}
	return s, p.done("snapshot")
}
