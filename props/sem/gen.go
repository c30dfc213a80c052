// Package sem is the sem subsystem (semaphore arrays with tasks that block:
// semop and semtimedop with every flag, semctl with every command, SEM_UNDO
// and task exit, signals, the kernel.sem limits) as the drivers see it: its
// generator and its registry value, Subsystem.
//
// The generator keeps a rough shadow of each array (its values, who sleeps
// on it) to steer the choices among named actions (actions.go): tasks that
// block on purpose (decrements below the value, waits for zero, complex
// operations), operations that then wake them, undo adjustments followed by
// exits, deliberately invalid calls (E2BIG, EFBIG, ERANGE, EINVAL, EACCES,
// EIDRM), and scenarios that reach the edges (scenarios.go): an exit whose
// undo takes a semaphore past SEMVMX or below 0, and a complex sleeper
// beside a simple one in the global queue. It is never an oracle.
package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Source is where the generator's choices come from.
type Source = engine.Source

type array struct {
	handle int
	vals   []int
	live   bool
	mode   uint16
	// owner created the array: root, or (one array in five) uid 1000.
	owner uint32
}

// Shadow is the generator's idea of the state a script has reached.
type Shadow struct {
	arrays []*array
	asleep [ops.NumTasks]*array
	// waitOn is the operation a task sleeps on in sleep(): what its array's
	// GETNCNT or GETZCNT count.
	waitOn [ops.NumTasks]ops.Sop
	undo   [ops.NumTasks]bool
	semopm int64
	// Progress holds the task span, handles, swarm, plan (the rest of a
	// scenario begun by an earlier step), fork slots and the tasks in
	// another namespace (ns.go).
	engine.Progress
	// mayRmid: this step may remove an array (one step in ten).
	mayRmid bool
}

// NewShadow returns the shadow of a fresh namespace, with swarm weights
// drawn from src.
func NewShadow(src Source) *Shadow {
	return &Shadow{semopm: ops.DefaultSemopm, Progress: engine.NewProgress(src, actions.Swarm(src))}
}

var (
	opPool    = []int{-1, -1, -2, 1, 1, 2, 3, 0, 0, -3}
	boundPool = []int{ops.SemVMX, -ops.SemVMX, ops.SemVMX - 1, 32000, -32768}
	valPool   = []int64{0, 1, 2, 5, ops.SemVMX, ops.SemVMX + 1, -1}
	modePool  = []uint16{0o600, 0o600, 0o666, 0o644, 0o400, 0o000, 0o602, 0o640, 0o660, 0o606}
)

// Step draws one operation and advances the shadow by its expected effect:
// the next one a scenario planned, a first array while there is none, or
// one of the actions that make sense now.
func (s *Shadow) Step(src Source) ops.Op {
	return s.Note(s.step(src))
}

func (s *Shadow) step(src Source) ops.Op {
	if op, ok := s.Plan.Next(); ok {
		return op
	}
	if len(s.live()) == 0 {
		return s.create(src, ops.IPCPrivate)
	}
	s.mayRmid = src.Intn(10, "rmid?") == 0
	op, _ := actions.Step(src, s.Swarm, s) // semop always makes sense
	return op
}

func setSops(op *ops.Op, sops ...ops.Sop) {
	op.Sem.Sops = [ops.SemMaxSops]ops.Sop{}
	copy(op.Sem.Sops[:], sops)
	op.Sem.NSops = uint8(len(sops))
}

func (s *Shadow) live() []*array { return engine.Live(s.arrays, func(a *array) bool { return a.live }) }

// array draws one of the live arrays.
func (s *Shadow) array(src Source) *array { return engine.Pick(src, s.live(), "array") }

func (s *Shadow) sleepers() int {
	n := 0
	for _, a := range s.asleep {
		if a != nil {
			n++
		}
	}
	return n
}

// sleeperOn returns, one time in two when a task sleeps on a, what one of
// them waits on.
func (s *Shadow) sleeperOn(src Source, a *array) (ops.Sop, bool) {
	var on []uint8
	for t, sl := range s.asleep {
		if sl == a {
			on = append(on, uint8(t))
		}
	}
	if len(on) == 0 || src.Intn(2, "count a sleeper") != 0 {
		return ops.Sop{}, false
	}
	return s.waitOn[engine.Pick(src, on, "sleeper")], true
}

// caller is usually root, sometimes a stranger.
func (s *Shadow) caller(src Source) uint32 {
	if src.Intn(6, "unprivileged") == 0 {
		return 1000
	}
	return 0
}

func (s *Shadow) create(src Source, key int32) ops.Op {
	s.NextHandle++
	n := 1 + src.Intn(4, "nsems")
	op := ops.Op{Kind: ops.KindGet, Type: ops.Sem, Bind: s.NextHandle, Key: key, Mode: engine.Pick(src, modePool, "mode"), Size: int64(n)}
	if key != ops.IPCPrivate {
		op.Creat = true
	}
	switch src.Intn(12, "bad nsems") {
	case 0:
		op.Size = 0
		return op
	case 1:
		op.Size = ops.DefaultSemmsl + 1
		return op
	}
	a := &array{handle: s.NextHandle, vals: make([]int, n), live: true, mode: op.Mode}
	if key == ops.IPCPrivate && src.Intn(5, "owned by uid 1000") == 0 {
		a.owner, op.As = 1000, 1000
	}
	s.arrays = append(s.arrays, a)
	return op
}

// MaxLen is the longest script Draw makes.
const MaxLen = 80

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow {
	c := *s
	m := map[*array]*array{}
	c.arrays = nil
	for _, a := range s.arrays {
		n := *a
		n.vals = append([]int(nil), a.vals...)
		m[a] = &n
		c.arrays = append(c.arrays, &n)
	}
	for t, a := range s.asleep {
		c.asleep[t] = m[a]
	}
	c.Progress = s.Progress.Copy()
	return &c
}

// Subsystem is the sem subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "sem",
	Doc:        "semaphore arrays with tasks that block: semop/semtimedop, semctl with every command, SEM_UNDO and exit, signals, kernel.sem",
	NewShadow:  func(src engine.Source, _ equiv.Relation) engine.Shadow { return NewShadow(src) },
	MinLen:     4,
	MaxLen:     MaxLen,
	FuzzMaxLen: 40,
	Relations:  []equiv.Relation{equiv.Exact},
}
