package engine

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Slots are the task slots a script has used since its start or their
// last exit, as the models count them: a fork_task into a used slot is
// EBUSY. Generators note every operation they draw and pick a fork's child
// among the free slots.
type Slots [ops.NumTasks]bool

// Note records what op does to the slots: an operation by a task uses its
// slot, an exit frees it, a fork uses its child's.
func (u *Slots) Note(op ops.Op) {
	switch {
	case op.Kind == ops.KindExit:
		u[op.Task] = false
	case op.Kind == ops.KindInterrupt:
	case op.Task > 0:
		u[op.Task] = true
		if op.Kind == ops.KindForkTask {
			u[op.ForkChild()] = true
		}
	}
}

// Fork draws a fork_task of parent (1..ops.MaxTask) into a free slot, or
// into a used one (EBUSY) one time in eight or when none is free.
func (u *Slots) Fork(src Source, parent uint8) ops.Op {
	var free, other []uint8
	for t := uint8(1); t <= ops.MaxTask; t++ {
		switch {
		case t == parent:
		case !u[t]:
			free = append(free, t)
		default:
			other = append(other, t)
		}
	}
	if len(free) == 0 || (len(other) > 0 && src.Intn(8, "fork into a used slot?") == 7) {
		free = other
	}
	child := Pick(src, free, "child")
	return ops.Op{Kind: ops.KindForkTask, Task: parent, Value: int64(child)}
}
