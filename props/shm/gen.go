// Package shm is the shm subsystem (shmget, shmat/shmdt per task, shmctl,
// IPC_RMID while attached, task exit, shm_rmid_forced and the
// /proc/sysvipc rows) as the drivers see it: its generator, its invariants
// and its registry value, Subsystem.
//
// The generator keeps a shadow of its own, which predicts successes closely
// enough to steer the choices (never an oracle); each script weighs the
// actions its own way (swarm testing).
package shm

import (
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// segment is the shadow of one segment a get bound.
type segment struct {
	key        int32
	mode       uint16
	creator    uint32 // cuid
	uid        uint32
	live, dest bool
	nattch     int
	task, gen  int // creating task incarnation
	orphan     bool
	pages      int64
}

// attachment is the shadow of one shmat that succeeded.
type attachment struct {
	seg       *segment
	task, gen int
	live      bool
	// win: at window page page (pages long).
	win         bool
	page, pages int64
	// origin is the handle of the shmat a fork's copy (in Shadow.copies)
	// comes from.
	origin int
}

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	segs     map[int]*segment
	segOrder []int
	keys     map[int32]*segment
	atts     map[int]*attachment
	attOrder []int
	nextAtt  int
	gen      [ops.NumTasks]int
	forced   bool
	renamed  bool
	huge     bool // the get being drawn asks for SHM_HUGETLB
	// copies are the forks' copies of attachments (fork.go).
	copies []*attachment
	// Progress holds the task span, handles, swarm, plan (the rest of a
	// visit to another namespace, ns.go), fork slots (fork.go) and the
	// tasks in another namespace.
	engine.Progress
}

// NewShadow returns the shadow of a fresh namespace for scripts compared
// under rel, with swarm weights drawn from src.
func NewShadow(src engine.Source, rel equiv.Relation) *Shadow {
	return &Shadow{segs: map[int]*segment{}, keys: map[int32]*segment{}, atts: map[int]*attachment{},
		renamed: rel == equiv.IDsRenamed, Progress: engine.NewProgress(src, actions.Swarm(src))}
}

var (
	keyPool   = []int32{0x1, 0x2, 0x3}
	modePool  = []uint16{0600, 0600, 0640, 0644, 0666, 0400, 0440, 0000, 0777, 0700}
	userPool  = []uint32{1000, 1001}
	ownerPool = []uint32{0, 1000, 1001, math.MaxUint32}
	// groupPool: the gid IPC_SET gives (0: the owner's); a user that is
	// not the owner lands in the group class.
	groupPool = []uint32{0, 0, 1000, 1001}
	sizePool  = []int64{1, 4096, 4097, 8192, 65536, 0}
)

// Step draws one operation and advances the shadow by its expected effect:
// one of the actions (actions.go) that make sense now.
func (s *Shadow) Step(src engine.Source) ops.Op {
	op, planned := s.Plan.Next()
	if !planned {
		op, _ = actions.Step(src, s.Swarm, s) // a create always makes sense
	} else if op.Kind == ops.KindExit {
		s.exit(int(op.Task))
	}
	return s.Note(op)
}

// task is usually the main task, otherwise one of the others.
func (s *Shadow) task(src engine.Source) uint8 {
	if src.Intn(3, "other task") == 0 {
		return 0
	}
	if t := uint8(1 + src.Intn(s.Span, "task")); !s.Away.Has(t) {
		return t
	}
	return 0 // a task away draws nothing of the script's namespace
}

// caller is usually root, sometimes an unprivileged user.
func (s *Shadow) caller(src engine.Source) uint32 {
	if src.Intn(4, "unprivileged") == 0 {
		return engine.Pick(src, userPool, "as")
	}
	return 0
}

func (s *Shadow) handles(live bool) []int {
	var hs []int
	for _, h := range s.segOrder {
		if s.segs[h].live == live {
			hs = append(hs, h)
		}
	}
	return hs
}

func (s *Shadow) attHandles(live bool) []int {
	var as []int
	for _, a := range s.attOrder {
		if s.atts[a].live == live {
			as = append(as, a)
		}
	}
	return as
}

// permitted predicts ipcperms for caller as.
func permitted(g *segment, as uint32, acc uint16) bool {
	if as == 0 {
		return true
	}
	req := ((acc >> 6) | (acc >> 3) | acc) & 7
	granted := g.mode & 7
	if as == g.creator || as == g.uid {
		granted = g.mode >> 6
	}
	return req&^granted&7 == 0
}

func (s *Shadow) get(src engine.Source, key int32) ops.Op {
	s.NextHandle++
	op := ops.Op{Kind: ops.KindGet, Type: ops.Shm, Bind: s.NextHandle, Key: key, Mode: engine.Pick(src, modePool, "mode"),
		Size: engine.Pick(src, sizePool, "size"), As: s.caller(src), Task: s.task(src), Huge: s.huge}
	if key != ops.IPCPrivate {
		switch src.Intn(5, "flags") {
		case 0:
		case 1:
			op.Creat, op.Excl = true, true
		default:
			op.Creat = true
		}
	}
	if g := s.keys[key]; key != ops.IPCPrivate && g != nil {
		if !(op.Creat && op.Excl) {
			s.bind(op.Bind, g)
		}
		return op
	}
	if (key != ops.IPCPrivate && !op.Creat) || op.Size < 1 {
		return op
	}
	if s.huge {
		return op // the shadow expects no huge pages: never created
	}
	g := &segment{key: key, mode: op.Mode, creator: op.As, uid: op.As, live: true, task: int(op.Task), gen: s.gen[op.Task], pages: ops.Pages(op.Size)}
	s.bind(op.Bind, g)
	if key != ops.IPCPrivate {
		s.keys[key] = g
	}
	return op
}

// shmmaxSizes are segment sizes at the top of the range: shmmax (a size_t,
// ULONG_MAX - 2^24 by default; as the int64 of Op.Size, negative), one
// below and one above it, and LLONG_MAX and one above it, where
// shmem_kernel_file_setup's loff_t turns negative.
var shmmaxSizes = []int64{shmmax, shmmax - 1, shmmax + 1, math.MaxInt64, math.MinInt64}

// shmmax is ops.DefaultShmmax as the int64 Op.Size holds it.
var shmmax = bitsOf(ops.DefaultShmmax)

// bitsOf is the int64 with the bits of u.
func bitsOf(u uint64) int64 { return int64(u) }

// atShmmax draws a get of a new segment whose size is at the top of the
// range (shmmaxSizes): never created, EINVAL or ENOMEM.
func (s *Shadow) atShmmax(src engine.Source) ops.Op {
	s.NextHandle++
	return ops.Op{Kind: ops.KindGet, Type: ops.Shm, Bind: s.NextHandle, Mode: 0o600, Size: engine.Pick(src, shmmaxSizes, "size"), Task: s.task(src)}
}

func (s *Shadow) bind(h int, g *segment) {
	s.segs[h] = g
	s.segOrder = append(s.segOrder, h)
}

func (s *Shadow) attach(src engine.Source, h int) ops.Op {
	s.nextAtt++
	op := ops.Op{Kind: ops.KindShmat, Type: ops.Shm, Bind: s.nextAtt, Obj: ops.Ref{Handle: h}, As: s.caller(src), Task: s.task(src)}
	switch src.Intn(8, "flags") {
	case 0:
		op.Flags = ops.ShmatRdonly
	case 1:
		op.Flags = ops.ShmatExec
	case 2:
		op.Flags = ops.ShmatRdonly | ops.ShmatExec
	case 3:
		if src.Intn(4, "bad address") == 0 {
			op.Flags = ops.ShmatBadAddr
		}
	}
	acc := uint16(0o444)
	if op.Flags&ops.ShmatRdonly == 0 {
		acc |= 0o222
	}
	if op.Flags&ops.ShmatExec != 0 {
		acc |= 0o111
	}
	g := s.segs[h]
	if g.live && op.Flags&ops.ShmatBadAddr == 0 && permitted(g, op.As, acc) {
		g.nattch++
		s.atts[op.Bind] = &attachment{seg: g, task: int(op.Task), gen: s.gen[op.Task], live: true}
		s.attOrder = append(s.attOrder, op.Bind)
	}
	return op
}

func (s *Shadow) detach(a, task int) ops.Op {
	op := ops.Op{Kind: ops.KindShmdt, Type: ops.Shm, Att: a, Task: uint8(task)}
	at := s.atts[a]
	if at.live && at.task == task && at.gen == s.gen[task] {
		s.close(at)
	} else if c := s.copyOf(a, task); c != nil {
		s.close(c)
	}
	return op
}

// close is one attachment going away: a shmdt, an exit, or the shadow's
// record of a shmat that will fail.
func (s *Shadow) close(at *attachment) {
	at.live = false
	g := at.seg
	g.nattch--
	if g.nattch == 0 && (g.dest || s.forced) {
		s.destroy(g)
	}
}

func (s *Shadow) destroy(g *segment) {
	g.live = false
	if s.keys[g.key] == g {
		delete(s.keys, g.key)
	}
}

func (s *Shadow) rmid(src engine.Source, h int) ops.Op {
	op := ops.Op{Kind: ops.KindRmid, Type: ops.Shm, Obj: ops.Ref{Handle: h}, As: s.caller(src), Task: s.task(src)}
	g := s.segs[h]
	if !(op.As == 0 || op.As == g.creator || op.As == g.uid) {
		return op
	}
	if g.nattch == 0 {
		s.destroy(g)
		return op
	}
	g.dest = true
	if s.keys[g.key] == g {
		delete(s.keys, g.key)
	}
	return op
}

func (s *Shadow) ctl(src engine.Source, h int, cmd ops.ShmCmd) ops.Op {
	op := ops.Op{Kind: ops.KindShmctl, Type: ops.Shm, Obj: ops.Ref{Handle: h}, Cmd: cmd, As: s.caller(src), Task: s.task(src)}
	if (cmd == ops.ShmLock || cmd == ops.ShmUnlock) && op.As != 0 && src.Intn(2, "as owner") == 0 {
		op.As = s.segs[h].uid // the owner without CAP_IPC_LOCK (0 stays root)
	}
	return op
}

func (s *Shadow) set(src engine.Source, h int) ops.Op {
	op := ops.Op{Kind: ops.KindShmctl, Type: ops.Shm, Obj: ops.Ref{Handle: h}, Cmd: ops.ShmIPCSet,
		Value: int64(engine.Pick(src, ownerPool, "owner")), Mode: engine.Pick(src, modePool, "mode"), As: s.caller(src), Task: s.task(src),
		Group: engine.Pick(src, groupPool, "gid")}
	g := s.segs[h]
	if g.live && (op.As == 0 || op.As == g.creator || op.As == g.uid) && op.Value != math.MaxUint32 {
		g.uid, g.mode = uint32(op.Value), op.Mode
	}
	return op
}

func (s *Shadow) exit(n int) {
	for _, a := range s.attOrder {
		if at := s.atts[a]; at.live && at.task == n && at.gen == s.gen[n] {
			s.close(at)
		}
	}
	for _, at := range s.copies {
		if at.live && at.task == n && at.gen == s.gen[n] {
			s.close(at)
		}
	}
	s.orphan(n)
	s.gen[n]++
}

// orphan is exit_shm for task n: the segments it created are orphaned (at
// its exit or when it leaves for another IPC namespace).
func (s *Shadow) orphan(n int) {
	for _, h := range s.segOrder {
		g := s.segs[h]
		if g.live && !g.orphan && g.task == n && g.gen == s.gen[n] {
			g.orphan = true
			if s.forced && g.nattch == 0 {
				s.destroy(g)
			}
		}
	}
}

func (s *Shadow) setForced(v int64) {
	if v != 0 && v != 1 {
		return
	}
	s.forced = v == 1
	if s.forced {
		for _, h := range s.segOrder {
			if g := s.segs[h]; g.live && g.orphan && g.nattch == 0 {
				s.destroy(g)
			}
		}
	}
}

// MaxLen is the longest script Draw makes.
const MaxLen = 120
