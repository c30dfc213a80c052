// Package sem is the sem subsystem (semaphore arrays with tasks that block:
// semop and semtimedop with every flag, semctl with every command, SEM_UNDO
// and task exit, signals, the kernel.sem limits) as the drivers see it: its
// generator and its registry value, Subsystem.
//
// The generator keeps a rough shadow of each array (its values, who sleeps
// on it) to steer the choices: tasks that block on purpose (decrements
// below the value, waits for zero, complex operations), operations that
// then wake them, undo adjustments followed by exits, and deliberately
// invalid calls (E2BIG, EFBIG, ERANGE, EINVAL, EACCES, EIDRM). It is never
// an oracle.
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
	waitOn     [ops.NumTasks]ops.Sop
	undo       [ops.NumTasks]bool
	nextHandle int
	semopm     int64
	swarm      engine.Swarm
	// plan holds the rest of a scenario begun by an earlier step.
	plan []ops.Op
}

// NewShadow returns the shadow of a fresh namespace, with swarm weights
// drawn from src.
func NewShadow(src Source) *Shadow {
	return &Shadow{semopm: ops.DefaultSemopm, swarm: engine.NewSwarm(src, int(numActions))}
}

type action uint8

const (
	actCreate action = iota
	actGetKey
	actSemop
	actBlock
	actWake
	actGet
	actSet
	actStat
	actUndo
	actExit
	actInterrupt
	actRmid
	actLimits
	actBad
	actList
	actBusy
	actUndoExit
	numActions
)

var (
	opPool    = []int{-1, -1, -2, 1, 1, 2, 3, 0, 0, -3}
	boundPool = []int{ops.SemVMX, -ops.SemVMX, ops.SemVMX - 1, 32000, -32768}
	valPool   = []int64{0, 1, 2, 5, ops.SemVMX, ops.SemVMX + 1, -1}
	modePool  = []uint16{0o600, 0o600, 0o666, 0o644, 0o400, 0o000, 0o602, 0o640, 0o660, 0o606}
)

// Step draws one operation and advances the shadow by its expected effect.
func (s *Shadow) Step(src Source) ops.Op {
	if len(s.plan) > 0 {
		op := s.plan[0]
		s.plan = s.plan[1:]
		return op
	}
	live := s.live()
	if len(live) == 0 {
		return s.create(src, ops.IPCPrivate)
	}
	menu := []action{actSemop, actSemop, actWake, actWake, actGet, actGet, actSet, actStat, actBad, actList, actLimits, actGetKey}
	if len(s.arrays) < 4 {
		menu = append(menu, actCreate, actCreate)
	}
	if free := s.freeTasks(); len(free) > 0 {
		menu = append(menu, actBlock, actBlock, actBlock, actBlock, actUndo, actUndo, actExit)
		if len(free) >= 2 {
			menu = append(menu, actUndoExit)
		}
	}
	if s.sleepers() > 0 {
		menu = append(menu, actWake, actWake, actInterrupt, actBusy)
	}
	if src.Intn(10, "rmid?") == 0 {
		menu = append(menu, actRmid)
	}
	a := engine.Pick(src, live, "array")
	ref := ops.Ref{Handle: a.handle}
	switch engine.Choose(src, s.swarm, menu) {
	case actCreate:
		return s.create(src, ops.IPCPrivate)
	case actGetKey:
		return s.create(src, engine.Pick(src, []int32{0x51, 0x52}, "key"))
	case actSemop:
		return s.semop(src, a, 0, true)
	case actBlock:
		t := engine.Pick(src, s.freeTasks(), "task")
		if src.Intn(3, "plain block") == 0 {
			return s.semop(src, a, t, false)
		}
		return s.sleep(src, a, t)
	case actWake:
		return s.wake(src, a)
	case actGet:
		cmd := engine.Pick(src, []ops.SemCmd{ops.SemGetVal, ops.SemGetPid, ops.SemGetNcnt, ops.SemGetZcnt, ops.SemGetNcnt, ops.SemGetZcnt, ops.SemGetAll}, "cmd")
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: cmd, Num: int64(src.Intn(len(a.vals)+1, "num"))}}
		if sp, ok := s.sleeperOn(src, a); ok {
			// Count the sleeper: GETZCNT for a wait for zero, else GETNCNT.
			op.Sem.Cmd, op.Sem.Num = ops.SemGetNcnt, int64(sp.Num)
			if sp.Op == 0 {
				op.Sem.Cmd = ops.SemGetZcnt
			}
			return op
		}
		if src.Intn(8, "negative num") == 0 {
			op.Sem.Num = -1
		}
		if cmd == ops.SemGetAll {
			op.Sem.Num = 0 // GETALL has no semnum
		}
		op.As = s.caller(src)
		return op
	case actSet:
		return s.set(src, a)
	case actStat:
		return s.stat(src, a)
	case actUndo:
		t := engine.Pick(src, s.freeTasks(), "task")
		n := src.Intn(len(a.vals), "num")
		v := engine.Pick(src, []int{1, 2, 3, -1, ops.SemVMX}, "undo op")
		if a.vals[n] > 0 && src.Intn(2, "take one back") == 0 {
			v = -1 // undone at exit: a sleeper's decrement may then go through
		}
		s.undo[t] = true
		op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: t}
		setSops(&op, ops.Sop{Num: uint16(n), Op: int16(v), Flags: ops.SemUndo | ops.SemNowait})
		if a.vals[n]+v >= 0 && a.vals[n]+v <= ops.SemVMX {
			a.vals[n] += v
		}
		return op
	case actExit:
		free := s.freeTasks()
		var undo []uint8
		for _, t := range free {
			if s.undo[t] {
				undo = append(undo, t)
			}
		}
		if len(undo) > 0 && src.Intn(4, "exit with undo") != 0 {
			free = undo
		}
		t := engine.Pick(src, free, "task")
		s.undo[t] = false
		return ops.Op{Kind: ops.KindExit, Task: t}
	case actInterrupt:
		t := uint8(1 + src.Intn(ops.MaxTask, "task"))
		s.asleep[t] = nil
		return ops.Op{Kind: ops.KindInterrupt, Task: t}
	case actRmid:
		op := ops.Op{Kind: ops.KindRmid, Type: ops.Sem, Obj: ref, As: s.caller(src)}
		if op.As != 0 && op.As != a.owner {
			return op // EPERM: neither root nor the owner
		}
		a.live = false
		for t, sl := range s.asleep {
			if sl == a {
				s.asleep[t] = nil
			}
		}
		return op
	case actLimits:
		return s.limits(src)
	case actUndoExit:
		return s.undoExit(src, a)
	case actList:
		return ops.Op{Kind: ops.KindList, Type: ops.Sem, Rows: src.Intn(3, "rows") != 0}
	case actBusy:
		var busy []uint8
		for t := 1; t <= ops.MaxTask; t++ {
			if s.asleep[t] != nil {
				busy = append(busy, uint8(t))
			}
		}
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Task: engine.Pick(src, busy, "task"), Sem: ops.SemArgs{Cmd: ops.SemGetAll}}
	}
	return s.bad(src, a)
}

func setSops(op *ops.Op, sops ...ops.Sop) {
	copy(op.Sem.Sops[:], sops)
	op.Sem.NSops = uint8(len(sops))
}

func (s *Shadow) live() []*array {
	var out []*array
	for _, a := range s.arrays {
		if a.live {
			out = append(out, a)
		}
	}
	return out
}

func (s *Shadow) freeTasks() []uint8 { return engine.FreeTasks(&s.asleep) }

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
	s.nextHandle++
	n := 1 + src.Intn(4, "nsems")
	op := ops.Op{Kind: ops.KindGet, Type: ops.Sem, Bind: s.nextHandle, Key: key, Mode: engine.Pick(src, modePool, "mode"), Size: int64(n)}
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
	a := &array{handle: s.nextHandle, vals: make([]int, n), live: true, mode: op.Mode}
	if key == ops.IPCPrivate && src.Intn(5, "owned by uid 1000") == 0 {
		a.owner, op.As = 1000, 1000
	}
	s.arrays = append(s.arrays, a)
	return op
}

// semop draws a simple or complex operation on a; by t0 (nowait true) it
// never sleeps, by a task it often does.
func (s *Shadow) semop(src Source, a *array, task uint8, nowait bool) ops.Op {
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: task}
	k := 1
	if src.Intn(3, "complex") == 0 {
		k = 2 + src.Intn(2, "nsops")
	}
	var sops []ops.Sop
	for range k {
		sp := ops.Sop{Num: uint16(src.Intn(len(a.vals), "num")), Op: int16(engine.Pick(src, opPool, "op"))}
		if src.Intn(12, "bound") == 0 {
			sp.Op = int16(engine.Pick(src, boundPool, "bound op"))
		}
		if src.Intn(6, "undo") == 0 {
			sp.Flags |= ops.SemUndo
		}
		if nowait || src.Intn(5, "nowait") == 0 {
			sp.Flags |= ops.SemNowait
		}
		sops = append(sops, sp)
	}
	setSops(&op, sops...)
	if task != 0 && src.Intn(8, "timeout") == 0 {
		op.Sem.Timeout = ops.SemZeroTimeout
	}
	if task == 0 && !nowait {
		op.Sem.Timeout = ops.SemZeroTimeout
	}
	if s.applies(a, sops) {
		s.apply(a, sops)
	} else if task != 0 && op.Sem.Timeout == ops.SemNoTimeout && !blockingNowait(a, sops) {
		s.asleep[task], s.waitOn[task] = a, sops[len(sops)-1]
	}
	return op
}

// undoExit begins a scenario of four steps: a task changes a semaphore
// with SEM_UNDO, another task sleeps until that change is undone, and the
// first task exits, which completes the sleeper.
func (s *Shadow) undoExit(src Source, a *array) ops.Op {
	free := s.freeTasks()
	i := src.Intn(len(free), "undoer")
	undoer, sleeper := free[i], free[(i+1)%len(free)]
	n := src.Intn(len(a.vals), "num")
	ref := ops.Ref{Handle: a.handle}
	zero := src.Intn(2, "zero") == 0
	set := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(n), Val: 1}}
	take := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: undoer}
	setSops(&take, ops.Sop{Num: uint16(n), Op: -1, Flags: ops.SemNowait | ops.SemUndo})
	wait := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: sleeper}
	setSops(&wait, ops.Sop{Num: uint16(n), Op: -1})
	if zero { // the undoer raises the value, the sleeper waits for zero
		set.Sem.Val = 0
		setSops(&take, ops.Sop{Num: uint16(n), Op: 1, Flags: ops.SemNowait | ops.SemUndo})
		setSops(&wait, ops.Sop{Num: uint16(n), Op: 0})
	}
	a.vals[n] = 0
	s.undo[undoer] = false
	s.plan = append(s.plan, take, wait, ops.Op{Kind: ops.KindExit, Task: undoer})
	return set
}

// sleep draws a semop by task t that blocks on the shadow values: a
// decrement past the value, or a wait for zero on a non-zero semaphore,
// sometimes with SEM_UNDO or behind a first sop that would run.
func (s *Shadow) sleep(src Source, a *array, t uint8) ops.Op {
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: t}
	n := src.Intn(len(a.vals), "num")
	sp := ops.Sop{Num: uint16(n), Op: int16(-(a.vals[n] + 1 + src.Intn(2, "more")))}
	if a.vals[n] != 0 && src.Intn(2, "zero") == 0 {
		sp.Op = 0
	}
	if src.Intn(4, "undo") == 0 {
		sp.Flags |= ops.SemUndo
	}
	sops := []ops.Sop{sp}
	if len(a.vals) > 1 && src.Intn(3, "complex") == 0 {
		m := (n + 1) % len(a.vals)
		sops = append([]ops.Sop{{Num: uint16(m), Op: 1}}, sops...)
	}
	setSops(&op, sops...)
	s.asleep[t], s.waitOn[t] = a, sp
	return op
}

// applies reports whether sops would run now on the shadow values.
func (s *Shadow) applies(a *array, sops []ops.Sop) bool {
	v := append([]int(nil), a.vals...)
	for _, sp := range sops {
		n := int(sp.Num)
		switch {
		case sp.Op == 0 && v[n] != 0:
			return false
		case v[n]+int(sp.Op) < 0, v[n]+int(sp.Op) > ops.SemVMX:
			return false
		}
		v[n] += int(sp.Op)
	}
	return true
}

// blockingNowait reports whether the first sop that would block has
// IPC_NOWAIT (then the call fails with EAGAIN instead of sleeping).
func blockingNowait(a *array, sops []ops.Sop) bool {
	v := append([]int(nil), a.vals...)
	for _, sp := range sops {
		n := int(sp.Op)
		if (sp.Op == 0 && v[sp.Num] != 0) || v[sp.Num]+n < 0 {
			return sp.Flags&ops.SemNowait != 0
		}
		if v[sp.Num]+n > ops.SemVMX {
			return true
		}
		v[sp.Num] += n
	}
	return true
}

func (s *Shadow) apply(a *array, sops []ops.Sop) {
	for _, sp := range sops {
		a.vals[sp.Num] += int(sp.Op)
	}
}

// wake draws an operation by t0 that is likely to complete sleepers: an
// increment, a SETVAL or a SETALL.
func (s *Shadow) wake(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	n := src.Intn(len(a.vals), "num")
	switch src.Intn(4, "how") {
	case 0:
		v := int64(engine.Pick(src, []int{0, 1, 3}, "val"))
		a.vals[n] = int(v)
		s.forgetSleepers(a)
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(n), Val: v}}
	case 1:
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetAll}}
		for i := range a.vals {
			a.vals[i] = src.Intn(3, "val")
			op.Sem.Vals[i] = int64(a.vals[i])
		}
		op.Sem.NVals = uint8(len(a.vals))
		s.forgetSleepers(a)
		return op
	}
	d := 1 + src.Intn(3, "up")
	if a.vals[n]+d > ops.SemVMX {
		d = 0
	}
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&op, ops.Sop{Num: uint16(n), Op: int16(d), Flags: ops.SemNowait})
	a.vals[n] += d
	s.forgetSleepers(a)
	return op
}

// forgetSleepers assumes the sleepers of a may have run: the shadow does
// not follow wake-ups, it only keeps a few tasks free for new sleepers.
func (s *Shadow) forgetSleepers(a *array) {
	for t, sl := range s.asleep {
		if sl == a && t%2 == 0 {
			s.asleep[t] = nil
		}
	}
}

func (s *Shadow) set(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	if src.Intn(2, "setall") == 0 {
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetAll}, As: s.caller(src)}
		n := len(a.vals)
		if src.Intn(4, "short") == 0 {
			n = max(n-1, 1)
		}
		for i := range n {
			v := engine.Pick(src, valPool, "val")
			if v < 0 {
				v = 0
			}
			op.Sem.Vals[i] = v
		}
		op.Sem.NVals = uint8(n)
		return op
	}
	return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, As: s.caller(src),
		Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(src.Intn(len(a.vals)+1, "num")), Val: engine.Pick(src, valPool, "val")}}
}

func (s *Shadow) stat(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	switch src.Intn(5, "stat") {
	case 0:
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{ID: int64(src.Intn(4, "index"))},
			Sem: ops.SemArgs{Cmd: engine.Pick(src, []ops.SemCmd{ops.SemStat, ops.SemStatAny}, "cmd")}, As: s.caller(src)}
	case 1:
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: engine.Pick(src, []ops.SemCmd{ops.SemIPCInfo, ops.SemInfoCmd}, "cmd")}}
	case 2:
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemIPCSet},
			Value: int64(engine.Pick(src, []uint32{0, 1000}, "owner")), Mode: engine.Pick(src, modePool, "mode"), As: s.caller(src),
			Group: engine.Pick(src, []uint32{0, 0, 1000}, "gid")}
		return op
	}
	return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemIPCStat}, As: s.caller(src)}
}

func (s *Shadow) limits(src Source) ops.Op {
	op := ops.Op{Kind: ops.KindSemLimits, Type: ops.Sem,
		Sem: ops.SemArgs{Limits: [4]int64{ops.DefaultSemmsl, ops.DefaultSemmns, ops.DefaultSemopm, ops.DefaultSemmni}}}
	switch src.Intn(5, "which limit") {
	case 0:
		op.Sem.Limits[0] = int64(1 + src.Intn(3, "semmsl"))
	case 1:
		op.Sem.Limits[1] = int64(src.Intn(8, "semmns"))
	case 2:
		op.Sem.Limits[2] = int64(1 + src.Intn(2, "semopm"))
	case 3:
		op.Sem.Limits[3] = engine.Pick(src, []int64{0, 3, ops.IPCMNI + 1, -1}, "semmni")
	}
	if op.Sem.Limits[3] >= 0 && op.Sem.Limits[3] <= ops.IPCMNI {
		s.semopm = op.Sem.Limits[2]
	}
	return op
}

// bad draws a deliberately invalid call.
func (s *Shadow) bad(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&op, ops.Sop{Num: 0, Op: 1, Flags: ops.SemNowait})
	switch src.Intn(6, "bad") {
	case 0: // EFBIG
		op.Sem.Sops[0].Num = uint16(engine.Pick(src, []int{len(a.vals), ops.SemMaxNum}, "num"))
	case 1: // an id that is no array
		op.Obj = ops.Ref{ID: engine.Pick(src, []int64{-1, ops.MakeID(7, 3)}, "id")}
	case 2: // an invalid timespec
		op.Sem.Timeout = engine.Pick(src, []ops.SemTimeout{ops.SemBadNsec, ops.SemNegSecond}, "timeout")
	case 3: // a stranger, EACCES where the mode refuses: an alter needs write, a wait for zero read
		op.As = 1000
		op.Sem.Sops[0].Op = engine.Pick(src, []int16{1, 0, -1}, "stranger op")
	case 4: // ERANGE: past SEMVMX, or a semadj past its bound
		setSops(&op, ops.Sop{Num: 0, Op: ops.SemVMX, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 1, Flags: ops.SemNowait | ops.SemUndo})
	default: // E2BIG if semopm was lowered
		setSops(&op, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait})
	}
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
	c.plan = append([]ops.Op(nil), s.plan...)
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
