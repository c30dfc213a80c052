package engine

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Away is the set of tasks a generator has sent into IPC namespaces other
// than the script's (bit N for task tN). A generator's shadow describes the
// script's namespace, so it draws its ordinary operations only for tasks
// that are not away; a visit (Visit) draws what an away task does.
type Away uint16

// Note records where op leaves tasks: an unshare sends its task away, a
// setns sends it where the task it names is (back home for t0 or a task at
// home), a fork's child goes where its parent is, and an exit brings the
// task's next incarnation home.
func (a *Away) Note(op ops.Op) {
	switch op.Kind {
	case ops.KindUnshare:
		*a |= 1 << op.Task
	case ops.KindSetns:
		a.set(op.Task, a.Has(op.NamespaceOf()))
	case ops.KindForkTask:
		a.set(op.ForkChild(), a.Has(op.Task))
	case ops.KindExit:
		a.set(op.Task, false)
	}
}

func (a *Away) set(t uint8, away bool) {
	if away {
		*a |= 1 << t
	} else {
		*a &^= 1 << t
	}
}

// Has reports whether task t is away.
func (a Away) Has(t uint8) bool { return t != 0 && a&(1<<t) != 0 }

// Home keeps the tasks of ts that are not away.
func (a Away) Home(ts []uint8) []uint8 {
	out := ts[:0:0]
	for _, t := range ts {
		if !a.Has(t) {
			out = append(out, t)
		}
	}
	return out
}

// Visit draws a visit to a new IPC namespace: task t unshares and, if u
// is not 0, task u joins it (setns); during runs there; then t goes home
// (setns ns=t0, or an exit) or, one time in three when stay allows it,
// stays away to the end of the script (the final snapshot then shows the
// namespace); then after runs (u's operations in the namespace once t has
// left it) and u goes home. A visit leaves at most t away.
func Visit(src Source, t, u uint8, stay bool, during, after []ops.Op) []ops.Op {
	out := []ops.Op{{Kind: ops.KindUnshare, Task: t}}
	if u != 0 {
		out = append(out, ops.Op{Kind: ops.KindSetns, Task: u, Value: int64(t)})
	}
	out = append(out, during...)
	home := func(task uint8) ops.Op {
		if src.Intn(3, "home by exit") == 0 {
			return ops.Op{Kind: ops.KindExit, Task: task}
		}
		return ops.Op{Kind: ops.KindSetns, Task: task}
	}
	if !stay || src.Intn(3, "stay away") != 0 {
		out = append(out, home(t))
	}
	if u != 0 {
		out = append(out, after...)
		out = append(out, home(u))
	}
	return out
}

// Visitors draws the tasks of a visit among free (at least one): t, and u
// one time in two when there is a second.
func Visitors(src Source, free []uint8) (t, u uint8) {
	i := src.Intn(len(free), "visitor")
	t = free[i]
	if len(free) > 1 && src.Intn(2, "second visitor") == 0 {
		u = free[(i+1)%len(free)]
	}
	return t, u
}
