package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// visitKeys are the keys a visit to another namespace makes its array with
// (there, never in the script's namespace).
var visitKeys = []int32{0x5351, 0x5352}

// visit draws a visit to a new IPC namespace (engine.Visit): task t makes
// a one-semaphore array there by a key, raises it with SEM_UNDO and reads
// it; a second task u, when one is free, joins first and reads the value
// after t left (a setns or exit applied t's adjustment there: exit_sem).
// Then t0 looks the key and the id up in the script's namespace. The
// switch applies the visitors' adjustments in the script's namespace too,
// as an exit does; the array's handle is never drawn again.
func (s *Shadow) visit(src Source) ops.Op {
	t, u := engine.Visitors(src, s.freeTasks())
	s.undo[t] = false
	if u != 0 {
		s.undo[u] = false
	}
	s.NextHandle++
	h := s.NextHandle
	ref := ops.Ref{Handle: h}
	key := engine.Pick(src, visitKeys, "key")
	raise := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: t}
	setSops(&raise, ops.Sop{Op: int16(1 + src.Intn(2, "by")), Flags: ops.SemNowait | ops.SemUndo})
	get := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemGetVal}}
	during := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Sem, Bind: h, Key: key, Creat: true, Mode: 0o666, Size: 1, Task: t},
		{Kind: ops.KindGet, Type: ops.Sem, Key: key, Mode: 0o666, Task: t},
		raise,
		withTask(get, t),
	}
	v := engine.Visit(src, t, u, s.Away == 0, during, []ops.Op{withTask(get, u)})
	s.Plan.Add(v[1:]...)
	s.Plan.Add(ops.Op{Kind: ops.KindGet, Type: ops.Sem, Key: key, Mode: 0o666}, get)
	return v[0]
}

func withTask(op ops.Op, t uint8) ops.Op {
	op.Task = t
	return op
}

// freeTasks lists the tasks t1..Span at home and awake.
func (s *Shadow) freeTasks() []uint8 { return s.Away.Home(engine.FreeTasks(&s.asleep, s.Span)) }

// twoFree draws a free task (the draw named what) and returns it and the
// free task after it (the first after the last; itself where it is the
// only one).
func (s *Shadow) twoFree(src Source, what string) (uint8, uint8) {
	free := s.freeTasks()
	i := src.Intn(len(free), what)
	return free[i], free[(i+1)%len(free)]
}

// scenarioStart draws what a scenario of two tasks on one semaphore
// begins with: an array (and its reference), two free tasks (twoFree, the
// draw named what) and the semaphore's number.
func (s *Shadow) scenarioStart(src Source, what string) (a *array, ref ops.Ref, t1, t2 uint8, n int) {
	a = s.array(src)
	t1, t2 = s.twoFree(src, what)
	return a, ops.Ref{Handle: a.handle}, t1, t2, src.Intn(len(a.vals), "num")
}
