package semq

import (
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A runner runs operations by tasks 0..ops.MaxTask on one semaphore array:
// a model (modelRunner) or the kernel (kernelRunner, which also checks the
// kernel against a model at every step). Tasks are processes: task t is
// process pid(t) until it exits, then a new process.
type runner interface {
	semop(task int, sops ...Sop) result
	setval(task, n, v int) []Completion
	setall(task int, vs ...int) []Completion
	exit(task int) []Completion
	interrupt(task int) Completion
	rmid() []Completion
	// ensureUndo is a semop with SEM_UNDO that fails with EFBIG: the undo
	// entry is made all the same.
	ensureUndo(task int)
	observe() observation
	pid(task int) ops.PID
}

// result is what an operation returned to its caller and whom it completed.
type result struct {
	Err     ops.Errno
	Blocked bool
	Done    []Completion
}

func (r result) String() string {
	s := r.Err.String()
	if r.Blocked {
		s = "blocked"
	}
	return s + doneString(r.Done)
}

func doneString(d []Completion) string {
	var b strings.Builder
	for _, c := range d {
		fmt.Fprintf(&b, " ; t%d %v", c.Task, c.Err)
	}
	return b.String()
}

// observation is everything semctl and the pending tasks show.
type observation struct {
	Vals    []int
	Pids    []ops.PID
	Ncnt    []int
	Zcnt    []int
	Otime   bool
	Pending []int
}

func observeArray(a *Array) observation {
	o := observation{Vals: a.GetAll(), Otime: a.Otime(), Pending: a.PendingTasks()}
	for n := range a.Nsems() {
		o.Pids = append(o.Pids, a.GetPid(n))
		o.Ncnt = append(o.Ncnt, a.GetNcnt(n))
		o.Zcnt = append(o.Zcnt, a.GetZcnt(n))
	}
	return o
}

// modelRunner runs a script on an Array.
type modelRunner struct {
	a   *Array
	gen [ops.NumTasks]int
}

func newModelRunner(nsems int, opt Options) *modelRunner {
	return &modelRunner{a: NewArray(nsems, opt)}
}

func (m *modelRunner) pid(task int) ops.PID { return ops.TaskPID(task, m.gen[task]) }

func (m *modelRunner) semop(task int, sops ...Sop) result {
	err, blocked, done := m.a.Semop(m.pid(task), task, sops)
	return result{Err: err, Blocked: blocked, Done: done}
}

func (m *modelRunner) setval(task, n, v int) []Completion { return m.a.SetVal(m.pid(task), n, v) }

func (m *modelRunner) setall(task int, vs ...int) []Completion { return m.a.SetAll(m.pid(task), vs) }

func (m *modelRunner) exit(task int) []Completion {
	d := m.a.Exit(m.pid(task))
	m.gen[task]++
	return d
}

func (m *modelRunner) interrupt(task int) Completion {
	c, _ := m.a.Interrupt(task)
	return c
}

func (m *modelRunner) rmid() []Completion { return m.a.Rmid() }

func (m *modelRunner) ensureUndo(task int) { m.a.EnsureUndo(m.pid(task)) }

func (m *modelRunner) observe() observation { return observeArray(m.a) }

// stepKind is the kind of one step of a drawn script.
type stepKind uint8

const (
	stepSemop stepKind = iota
	stepSetVal
	stepSetAll
	stepExit
	stepInterrupt
	stepRmid
	stepEnsureUndo
)

// step is one operation of a drawn script.
type step struct {
	kind stepKind
	task int
	sops []Sop
	n, v int
	vs   []int
}

func (s step) String() string {
	switch s.kind {
	case stepSemop:
		parts := make([]string, len(s.sops))
		for i, o := range s.sops {
			parts[i] = o.String()
		}
		return fmt.Sprintf("t%d semop {%s}", s.task, strings.Join(parts, ", "))
	case stepSetVal:
		return fmt.Sprintf("t%d setval s%d=%d", s.task, s.n, s.v)
	case stepSetAll:
		return fmt.Sprintf("t%d setall %v", s.task, s.vs)
	case stepExit:
		return fmt.Sprintf("t%d exit", s.task)
	case stepInterrupt:
		return fmt.Sprintf("t%d signal", s.task)
	case stepRmid:
		return "rmid"
	}
	return fmt.Sprintf("t%d semop with SEM_UNDO: EFBIG", s.task)
}

// apply runs a step on a runner.
func apply(r runner, s step) result {
	switch s.kind {
	case stepSemop:
		return r.semop(s.task, s.sops...)
	case stepSetVal:
		return result{Done: r.setval(s.task, s.n, s.v)}
	case stepSetAll:
		return result{Done: r.setall(s.task, s.vs...)}
	case stepExit:
		return result{Done: r.exit(s.task)}
	case stepInterrupt:
		return result{Done: []Completion{r.interrupt(s.task)}}
	case stepRmid:
		return result{Done: r.rmid()}
	}
	r.ensureUndo(s.task)
	return result{Err: efbig}
}

// Drawing scripts. Values and ops concentrate on small numbers, where
// sleepers interact, with the boundaries mixed in.
var (
	smallOp    = rapid.IntRange(-2, 2)
	boundaryOp = rapid.SampledFrom([]int{-32768, -32767, -3, 3, 32766, 32767})
	anyOp      = rapid.OneOf(smallOp, smallOp, smallOp, boundaryOp)
	anyValue   = rapid.OneOf(rapid.IntRange(0, 3), rapid.SampledFrom([]int{32766, 32767}))
)

// drawNsems draws the size of an array.
func drawNsems(t *rapid.T) int { return rapid.IntRange(1, 4).Draw(t, "nsems") }

// drawStep draws a step that tasks in their current state can make:
// pending tasks are only signalled; the others issue calls or exit.
// withRmid allows IPC_RMID, after which the script must end.
func drawStep(t *rapid.T, nsems int, pending []int, withRmid bool) step {
	var idle []int
	for task := range ops.NumTasks {
		if !slices.Contains(pending, task) {
			idle = append(idle, task)
		}
	}
	weights := []stepKind{stepSemop, stepSemop, stepSemop, stepSemop, stepSemop, stepSemop, stepSemop, stepSemop,
		stepSetVal, stepSetAll, stepExit, stepEnsureUndo}
	if len(pending) > 0 {
		weights = append(weights, stepInterrupt)
	}
	if len(idle) == 0 {
		weights = []stepKind{stepInterrupt}
	}
	if withRmid && rapid.IntRange(0, 40).Draw(t, "rmid?") == 0 {
		return step{kind: stepRmid}
	}
	s := step{kind: rapid.SampledFrom(weights).Draw(t, "kind")}
	if s.kind == stepInterrupt {
		s.task = rapid.SampledFrom(pending).Draw(t, "task")
		return s
	}
	s.task = rapid.SampledFrom(idle).Draw(t, "task")
	switch s.kind {
	case stepSemop:
		s.sops = drawSops(t, nsems)
	case stepSetVal:
		s.n = rapid.IntRange(0, nsems-1).Draw(t, "semnum")
		s.v = anyValue.Draw(t, "value")
	case stepSetAll:
		s.vs = rapid.SliceOfN(anyValue, nsems, nsems).Draw(t, "values")
	}
	return s
}

// drawSops draws a semop: mostly one or two sops, up to four, sem_nums
// repeating freely, every flag combination.
func drawSops(t *rapid.T, nsems int) []Sop {
	n := rapid.SampledFrom([]int{1, 1, 1, 2, 2, 3, 4}).Draw(t, "nsops")
	sops := make([]Sop, n)
	for i := range sops {
		sops[i] = Sop{
			Num:    rapid.IntRange(0, nsems-1).Draw(t, "num"),
			Op:     anyOp.Draw(t, "op"),
			NoWait: rapid.IntRange(0, 3).Draw(t, "nowait") == 0,
			Undo:   rapid.IntRange(0, 2).Draw(t, "undo") == 0,
		}
	}
	return sops
}
