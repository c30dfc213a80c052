package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// forkTask forks a free task into a free slot (more often one that holds
// adjustments): the child has none of them.
func (s *Shadow) forkTask(src Source) ops.Op {
	free := s.freePreferringUndo(func() bool { return src.Intn(2, "fork with undo") == 0 })
	op := s.Slots.Fork(src, engine.Pick(src, free, "parent"))
	if !s.Slots[op.ForkChild()] {
		s.undo[op.ForkChild()] = false
	}
	return op
}

// forkUndo begins the scenario of a fork after SEM_UNDO: a task changes a
// semaphore with SEM_UNDO and forks into a slot freed by an exit; the child
// exits (it has no undo list: nothing is undone), then GETVAL shows the
// value, and the parent's exit undoes the change.
func (s *Shadow) forkUndo(src Source) ops.Op {
	a, ref, parent, child, n := s.scenarioStart(src, "parent")
	set := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(n), Val: 1}}
	take := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref, Task: parent}
	setSops(&take, ops.Sop{Num: uint16(n), Op: 1, Flags: ops.SemNowait | ops.SemUndo})
	get := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemGetVal, Num: int64(n)}}
	fork := ops.Op{Kind: ops.KindForkTask, Task: parent, Value: int64(child)}
	s.Plan.Add(take, ops.Op{Kind: ops.KindExit, Task: child}, fork, ops.Op{Kind: ops.KindExit, Task: child}, get,
		ops.Op{Kind: ops.KindExit, Task: parent}, get)
	a.vals[n] = 1
	s.undo[parent], s.undo[child] = false, false
	s.forgetSleepers(a)
	return set
}
