package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// undoExit begins a scenario of four steps: a task changes a semaphore
// with SEM_UNDO, another task sleeps until that change is undone, and the
// first task exits, which completes the sleeper.
func (s *Shadow) undoExit(src Source, a *array) ops.Op {
	undoer, sleeper := s.twoFree(src, "undoer")
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
	s.Plan.Add(take, wait, ops.Op{Kind: ops.KindExit, Task: undoer})
	return set
}

// exitClamp begins the scenario of an exit whose undo takes a semaphore
// past its range: a task that holds an adjustment of d on semaphore n
// exits when n is at SEMVMX and the adjustment is positive (a decrement by
// d with SEM_UNDO, then t0 puts the d back), or when n is at 0 and it is
// negative (an increment by d with SEM_UNDO, then t0 takes it away).
// exit_sem clamps the value to SEMVMX or to 0; a GETVAL shows it.
func (s *Shadow) exitClamp(src Source) ops.Op {
	a := s.array(src)
	ref := ops.Ref{Handle: a.handle}
	n := src.Intn(len(a.vals), "num")
	u := engine.Pick(src, s.freeTasks(), "undoer")
	d := 1 + src.Intn(3, "adjustment")
	top := src.Intn(2, "at SEMVMX") == 0
	start, end := 0, 0 // the value set first, and the value at the exit
	if top {
		start, end, d = ops.SemVMX, ops.SemVMX, -d
	}
	set := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(n), Val: int64(start)}}
	take := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: u}
	setSops(&take, ops.Sop{Num: uint16(n), Op: int16(d), Flags: ops.SemNowait | ops.SemUndo})
	back := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&back, ops.Sop{Num: uint16(n), Op: int16(-d), Flags: ops.SemNowait})
	get := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemGetVal, Num: int64(n)}}
	s.Plan.Add(take, back, ops.Op{Kind: ops.KindExit, Task: u}, get)
	a.vals[n] = end
	s.undo[u] = false
	s.forgetSleepers(a)
	return set
}

// globalQueue begins the scenario of a complex sleeper and a simple one on
// the same semaphore while the array is in global mode (a complex
// operation pends, so every altering sleeper is on the global queue, in
// arrival order), after a SETALL of zeros:
//
//   - the simple one first (it moves from its semaphore's queue to the
//     head of the global one when the complex one arrives); the complex
//     one, which waits on another semaphore (or the same one), gives n one
//     when it completes. t0's increment completes the complex one, and the
//     scan must start again from the head to complete the simple one.
//   - the complex one first (it waits on n and gives another one), the
//     simple one queued behind it; t0 adds one or two to n: the complex
//     one is served first, then the simple one if there is enough.
func (s *Shadow) globalQueue(src Source) ops.Op {
	a, ref, t1, t2, n := s.scenarioStart(src, "first sleeper")
	m := (n + 1) % len(a.vals) // n itself in an array of one
	zeros := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetAll, NVals: uint8(len(a.vals))}}
	for k := range a.vals {
		a.vals[k] = 0
	}
	s.forgetSleepers(a)
	simple := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&simple, ops.Sop{Num: uint16(n), Op: -1})
	complexOp := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	wake := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	if src.Intn(2, "simple first") == 0 {
		simple.Task, complexOp.Task = t1, t2
		setSops(&complexOp, ops.Sop{Num: uint16(m), Op: -1}, ops.Sop{Num: uint16(n), Op: 1})
		setSops(&wake, ops.Sop{Num: uint16(m), Op: 1, Flags: ops.SemNowait})
		s.Plan.Add(simple, complexOp, wake)
		return zeros
	}
	complexOp.Task, simple.Task = t1, t2
	setSops(&complexOp, ops.Sop{Num: uint16(n), Op: -1}, ops.Sop{Num: uint16(m), Op: 1})
	k := 1 + src.Intn(2, "enough for both")
	setSops(&wake, ops.Sop{Num: uint16(n), Op: int16(k), Flags: ops.SemNowait})
	s.Plan.Add(complexOp, simple, wake)
	if k == 1 && m != n {
		s.asleep[t2], s.waitOn[t2] = a, simple.Sem.Sops[0]
	}
	a.vals[m] = 1
	if m == n {
		a.vals[m] = k - 1
	}
	return zeros
}
