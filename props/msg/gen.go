// Package msg is the msg subsystem (SysV message queues with tasks that
// block) as the drivers see it: its generator and its registry value,
// Subsystem.
//
// The generator keeps a rough shadow of each queue (its capacity, what is
// queued, who sleeps on it) to steer the choices among named actions
// (actions.go), and sets up races and edges on purpose (scenarios.go):
// small queues filled by the main task, several tasks asleep as senders
// with messages that fit once a receive frees space, receivers asleep
// before a send, a queue filled to exactly msgmnb. The shadow only steers;
// it is never an oracle.
package msg

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"math/bits"
)

// Source is where the generator's choices come from.
type Source = engine.Source

type sleeper struct {
	queue int // handle
	send  bool
	size  int64
	mtype int64 // a receiver's msgtyp
}

type queue struct {
	handle int
	qbytes int64
	msgs   []int64 // sizes of queued messages (types are not tracked)
	mtypes []int64
	mode   uint16
	// owner is who created the queue: root, or (one queue in five) uid
	// 1000, whose own bits then decide for it.
	owner uint32
	// group: IPC_SET gave the queue uid 1000's group (gid=1000), so that
	// the mode's group bits decide for it.
	group bool
	live  bool
	// blockers are the tasks (a bit each) that ever made a call on the
	// queue that may sleep: a bound on how many sleep on it at once that
	// holds even where the shadow's guess of who sleeps is wrong.
	blockers uint16
}

// may reports whether caller as may write (send) or read (receive) the
// queue: root always; uid 1000 by the mode's owner bits when it created
// the queue, by its group bits when the queue is in its group, else by
// the last three bits.
func (q *queue) may(as uint32, write bool) bool {
	if as == 0 {
		return true
	}
	bits := q.mode
	switch {
	case as == q.owner:
		bits >>= 6
	case q.group:
		bits >>= 3
	}
	if write {
		return bits&0o2 != 0
	}
	return bits&0o4 != 0
}

// caller draws, one time in six, an unprivileged caller (uid and gid 1000,
// no capability) for an operation whose permission check matters.
func caller(src Source) uint32 {
	if src.Intn(6, "unprivileged") == 0 {
		return 1000
	}
	return 0
}

func (q *queue) cbytes() int64 {
	var n int64
	for _, s := range q.msgs {
		n += s
	}
	return n
}

func (q *queue) fits(size int64) bool {
	return size+q.cbytes() <= q.qbytes && int64(len(q.msgs))+1 <= q.qbytes
}

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	queues []*queue
	asleep [ops.NumTasks]*sleeper
	// Progress holds the task span, handles, swarm, plan (a race set up
	// at the start, a scenario begun by an earlier step), fork slots and
	// the tasks in another namespace (ns.go).
	engine.Progress
	// mayRmid: this step may remove a queue (one step in twelve).
	mayRmid bool
}

// NewShadow returns the shadow of a fresh namespace, with swarm weights
// drawn from src; one script in two starts by setting up a race, one in
// eight with a permission scenario.
func NewShadow(src Source) *Shadow {
	s := &Shadow{Progress: engine.NewProgress(src, actions.Swarm(src))}
	switch src.Intn(8, "setup") {
	case 0, 1, 2, 3:
		s.Plan.Add(s.raceSetup(src)...)
	case 4:
		s.Plan.Add(s.permSetup(src)...)
	case 5:
		s.Plan.Add(s.countSetup(src)...)
	}
	return s
}

var (
	qbytesPool = []int64{0, 3, 16, 24, 30, 40, 60, 100, 100, ops.DefaultMsgmnb, ops.DefaultMsgmnb + 1, 1<<32 + 5}
	sizePool   = []int64{0, 1, 5, 8, 10, 10, 20, 30, 40, 60}
	typePool   = []int64{1, 1, 2, 3, 7}
	rtypePool  = []int64{0, 0, 1, 2, -2, 7, -9223372036854775808}
	bufPool    = []int64{0, 2, 8, 40, 64, 200}
	// modePool: what IPC_SET gives; a queue is created with one of the
	// first five. Others may write only (0602) or read only (0604, 0644),
	// so that a sleeping stranger's permission can be taken away; the
	// group's bits differ from the others' in the last four, for a queue
	// in uid 1000's group (groupPool).
	modePool = []uint16{0o600, 0o600, 0o666, 0o644, 0o602, 0o604, 0o400, 0o200, 0o640, 0o620, 0o660, 0o606}
	// groupPool: the gid IPC_SET gives (0: none, the queue keeps its own);
	// 1000 puts the unprivileged caller in the queue's group.
	groupPool = []uint32{0, 0, 0, 1000}
)

func pick[T any](src Source, pool []T, label string) T { return engine.Pick(src, pool, label) }

func (s *Shadow) live() []*queue { return engine.Live(s.queues, func(q *queue) bool { return q.live }) }

// queue draws one of the live queues.
func (s *Shadow) queue(src Source) *queue { return pick(src, s.live(), "queue") }

// Step draws one operation and advances the shadow by its expected effect:
// the next one a setup or scenario planned, a first queue while there is
// none, or one of the actions that make sense now.
func (s *Shadow) Step(src Source) ops.Op {
	return s.Note(s.step(src))
}

func (s *Shadow) step(src Source) ops.Op {
	if op, ok := s.Plan.Next(); ok {
		s.noteBlocker(op)
		return op
	}
	if len(s.live()) == 0 {
		return s.create(src)
	}
	s.mayRmid = src.Intn(12, "rmid?") == 0
	op, _ := actions.Step(src, s.Swarm, s) // a receive always makes sense
	s.noteBlocker(op)
	return op
}

// noteBlocker records a call that may sleep in its queue's blockers.
func (s *Shadow) noteBlocker(op ops.Op) {
	if (op.Kind != ops.KindMsgsnd && op.Kind != ops.KindMsgrcv) || op.MsgFlags&ops.MsgNowait != 0 || op.Task == 0 {
		return
	}
	for _, q := range s.queues {
		if q.handle == op.Obj.Handle {
			q.blockers |= 1 << op.Task
		}
	}
}

// mayBlock reports whether task t may make a call on q that sleeps: only
// ops.MaxRacingWakeups tasks ever do, so that one operation never wakes
// more tasks on a queue than the models follow in every order.
func (q *queue) mayBlock(t uint8) bool {
	return bits.OnesCount16(q.blockers|1<<t) <= ops.MaxRacingWakeups
}

func (s *Shadow) create(src Source) ops.Op {
	s.NextHandle++
	q := &queue{handle: s.NextHandle, qbytes: ops.DefaultMsgmnb, mode: pick(src, modePool[:5], "mode"), live: true}
	if src.Intn(5, "owned by uid 1000") == 0 {
		q.owner = 1000
	}
	s.queues = append(s.queues, q)
	op := ops.Op{Kind: ops.KindGet, Type: ops.Msg, Bind: q.handle, Key: ops.IPCPrivate, Mode: q.mode, As: q.owner}
	if src.Intn(4, "keyed?") == 0 {
		// A key of its own (a handle is never drawn twice in a script), so
		// that no two handles name one queue: the key goes into the
		// namespace's key table (ipc_addid) and out at IPC_RMID
		// (ipc_kht_remove), and a msgget of it finds the queue
		// (ipcget_public) before or after.
		op.Key, op.Creat, op.Excl = keyedBase+int32(q.handle), true, src.Intn(2, "excl?") == 0
		if src.Intn(2, "looked up by its key?") == 0 {
			s.Plan.Add(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: op.Key, Mode: q.mode, As: q.owner})
		}
	}
	return op
}

// keyedBase is the first key of the keyed queues a script makes (the
// queue's handle is added); the visits' keys lie below it.
const keyedBase = 0x6d00

// deliver hands a sent message to a sleeping receiver or queues it.
func (s *Shadow) deliver(q *queue, size, mtype int64) {
	for t, sl := range s.asleep {
		if sl != nil && sl.queue == q.handle && !sl.send && (sl.mtype == 0 || sl.mtype == mtype || (sl.mtype < 0 && mtype <= -sl.mtype)) {
			s.asleep[t] = nil
			return
		}
	}
	q.msgs = append(q.msgs, size)
	q.mtypes = append(q.mtypes, mtype)
}

// take removes a message a receive of msgtyp would get, and lets senders in.
func (s *Shadow) take(q *queue, msgtyp int64) bool {
	for i, t := range q.mtypes {
		if msgtyp == 0 || t == msgtyp || (msgtyp < 0 && t <= -msgtyp) {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			q.mtypes = append(q.mtypes[:i], q.mtypes[i+1:]...)
			s.wakeAll(q)
			return true
		}
	}
	return false
}

// wakeAll lets the sleeping senders that fit in, in task order.
func (s *Shadow) wakeAll(q *queue) {
	for t, sl := range s.asleep {
		if sl != nil && sl.queue == q.handle && sl.send && q.fits(sl.size) {
			s.asleep[t] = nil
			q.msgs = append(q.msgs, sl.size)
			q.mtypes = append(q.mtypes, 1)
		}
	}
}

// MaxLen is the longest script Draw makes.
const MaxLen = 60

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { return s.clone() }

func (s *Shadow) clone() *Shadow {
	c := &Shadow{Progress: s.Progress.Copy()}
	for _, q := range s.queues {
		n := *q
		n.msgs = append([]int64(nil), q.msgs...)
		n.mtypes = append([]int64(nil), q.mtypes...)
		c.queues = append(c.queues, &n)
	}
	for t, sl := range s.asleep {
		if sl != nil {
			n := *sl
			c.asleep[t] = &n
		}
	}
	return c
}

// Subsystem is the msg subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "msg",
	Doc:        "message queues with tasks that block: msgsnd, msgrcv with every search mode and flag, msgctl, woken tasks that race",
	NewShadow:  func(src engine.Source, _ equiv.Relation) engine.Shadow { return NewShadow(src) },
	MinLen:     4,
	MaxLen:     MaxLen,
	FuzzMaxLen: 40,
	Relations:  []equiv.Relation{equiv.Exact},
}
