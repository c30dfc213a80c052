package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// actions is the generator's table: each step draws one of those whose
// When holds, by weight (times the script's swarm).
var actions = engine.Actions[*Shadow]{
	{Name: "create", Weight: 2, When: func(s *Shadow) bool { return len(s.arrays) < 4 }, Draw: func(s *Shadow, src Source) ops.Op { return s.create(src, ops.IPCPrivate) }},
	{Name: "get key", Weight: 1, Draw: func(s *Shadow, src Source) ops.Op {
		return s.create(src, engine.Pick(src, []int32{0x51, 0x52}, "key"))
	}},
	{Name: "semop", Weight: 2, Draw: func(s *Shadow, src Source) ops.Op { return s.semop(src, s.array(src), 0, true) }},
	{Name: "block", Weight: 4, When: hasFree, Draw: (*Shadow).block},
	{Name: "wake", Weight: 2, Draw: func(s *Shadow, src Source) ops.Op { return s.wake(src, s.array(src)) }},
	{Name: "wake sleepers", Weight: 2, When: hasSleepers, Draw: func(s *Shadow, src Source) ops.Op { return s.wake(src, s.array(src)) }},
	{Name: "get", Weight: 2, Draw: (*Shadow).get},
	{Name: "set", Weight: 1, Draw: func(s *Shadow, src Source) ops.Op { return s.set(src, s.array(src)) }},
	{Name: "stat", Weight: 1, Draw: func(s *Shadow, src Source) ops.Op { return s.stat(src, s.array(src)) }},
	{Name: "undo", Weight: 2, When: hasFree, Draw: (*Shadow).undoOp},
	{Name: "exit", Weight: 1, When: hasFree, Draw: (*Shadow).exit},
	{Name: "interrupt", Weight: 1, When: hasSleepers, Draw: (*Shadow).interrupt},
	{Name: "rmid", Weight: 1, When: func(s *Shadow) bool { return s.mayRmid }, Draw: (*Shadow).rmid},
	{Name: "limits", Weight: 1, Draw: (*Shadow).limits},
	{Name: "bad", Weight: 1, Draw: func(s *Shadow, src Source) ops.Op { return s.bad(src, s.array(src)) }},
	{Name: "list", Weight: 1, Draw: func(_ *Shadow, src Source) ops.Op {
		return ops.Op{Kind: ops.KindList, Type: ops.Sem, Rows: src.Intn(3, "rows") != 0}
	}},
	{Name: "busy", Weight: 1, When: hasSleepers, Draw: (*Shadow).busy},
	{Name: "undo exit", Weight: 1, When: func(s *Shadow) bool { return len(s.freeTasks()) >= 2 }, Draw: func(s *Shadow, src Source) ops.Op { return s.undoExit(src, s.array(src)) }},
	{Name: "exit clamp", Weight: 1, When: hasFree, Draw: (*Shadow).exitClamp},
	{Name: "fork", Weight: 1, When: hasFree, Draw: (*Shadow).forkTask},
	{Name: "fork undo", Weight: 1, When: func(s *Shadow) bool { return len(s.freeTasks()) >= 2 }, Draw: (*Shadow).forkUndo},
	{Name: "global queue", Weight: 1, When: func(s *Shadow) bool { return len(s.freeTasks()) >= 2 }, Draw: (*Shadow).globalQueue},
	{Name: "visit a namespace", Weight: 1, When: hasFree, Draw: (*Shadow).visit},
}

func hasFree(s *Shadow) bool     { return len(s.freeTasks()) > 0 }
func hasSleepers(s *Shadow) bool { return s.sleepers() > 0 }

// block puts a free task to sleep on purpose (sleep), or draws a semop by
// it that may or may not block.
func (s *Shadow) block(src Source) ops.Op {
	a := s.array(src)
	t := engine.Pick(src, s.freeTasks(), "task")
	if src.Intn(3, "plain block") == 0 {
		return s.semop(src, a, t, false)
	}
	return s.sleep(src, a, t)
}

// get draws a GETVAL, GETPID, GETNCNT, GETZCNT or GETALL, one time in two
// counting a task that sleeps on the array.
func (s *Shadow) get(src Source) ops.Op {
	a := s.array(src)
	cmd := engine.Pick(src, []ops.SemCmd{ops.SemGetVal, ops.SemGetPid, ops.SemGetNcnt, ops.SemGetZcnt, ops.SemGetNcnt, ops.SemGetZcnt, ops.SemGetAll}, "cmd")
	op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Sem: ops.SemArgs{Cmd: cmd, Num: int64(src.Intn(len(a.vals)+1, "num"))}}
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
}

// undoOp is a semop with SEM_UNDO by a free task, which that task's exit
// will undo.
func (s *Shadow) undoOp(src Source) ops.Op {
	a := s.array(src)
	t := engine.Pick(src, s.freeTasks(), "task")
	n := src.Intn(len(a.vals), "num")
	v := engine.Pick(src, []int{1, 2, 3, -1, ops.SemVMX}, "undo op")
	if a.vals[n] > 0 && src.Intn(2, "take one back") == 0 {
		v = -1 // undone at exit: a sleeper's decrement may then go through
	}
	s.undo[t] = true
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: t}
	setSops(&op, ops.Sop{Num: uint16(n), Op: int16(v), Flags: ops.SemUndo | ops.SemNowait})
	if a.vals[n]+v >= 0 && a.vals[n]+v <= ops.SemVMX {
		a.vals[n] += v
	}
	return op
}

// freePreferringUndo returns the free tasks, or only those of them that
// hold adjustments where there are some and prefer (asked only then) says
// so.
func (s *Shadow) freePreferringUndo(prefer func() bool) []uint8 {
	free := s.freeTasks()
	var undo []uint8
	for _, t := range free {
		if s.undo[t] {
			undo = append(undo, t)
		}
	}
	if len(undo) > 0 && prefer() {
		return undo
	}
	return free
}

// exit ends a free task, three times in four one that holds adjustments.
func (s *Shadow) exit(src Source) ops.Op {
	free := s.freePreferringUndo(func() bool { return src.Intn(4, "exit with undo") != 0 })
	t := engine.Pick(src, free, "task")
	s.undo[t] = false
	return ops.Op{Kind: ops.KindExit, Task: t}
}

func (s *Shadow) interrupt(src Source) ops.Op {
	t := uint8(1 + src.Intn(s.Span, "task"))
	s.asleep[t] = nil
	return ops.Op{Kind: ops.KindInterrupt, Task: t}
}

func (s *Shadow) rmid(src Source) ops.Op {
	a := s.array(src)
	op := ops.Op{Kind: ops.KindRmid, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, As: s.caller(src)}
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
}

// busy is a call by a task that sleeps: EBUSY.
func (s *Shadow) busy(src Source) ops.Op {
	a := s.array(src)
	var busy []uint8
	for t := 1; t <= ops.MaxTask; t++ {
		if s.asleep[t] != nil {
			busy = append(busy, uint8(t))
		}
	}
	return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: engine.Pick(src, busy, "task"), Sem: ops.SemArgs{Cmd: ops.SemGetAll}}
}
