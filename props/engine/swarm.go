package engine

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Swarm is a per-script weighting of a generator's actions (swarm testing,
// Groce et al., ISSTA 2012): for the whole script each action is left out,
// kept, or favoured two or three times, so that one script creates
// hundreds of objects and never removes one while the next only removes and
// reuses. Each script draws its own.
type Swarm []int

// NewSwarm draws the weights of n actions, at least one of them not zero.
func NewSwarm(src Source, n int) Swarm {
	w := make(Swarm, n)
	any := false
	for i := range w {
		w[i] = src.Intn(4, "swarm")
		any = any || w[i] > 0
	}
	if !any {
		for i := range w {
			w[i] = 1
		}
	}
	return w
}

// Choose draws one action of menu (repeats are base weights), each weighted
// by the swarm; actions the swarm leaves out are chosen only when the menu
// holds nothing else.
func Choose[A ~uint8](src Source, w Swarm, menu []A) A {
	total := 0
	for _, a := range menu {
		total += w.weight(int(a))
	}
	if total == 0 {
		return menu[src.Intn(len(menu), "action")]
	}
	k := src.Intn(total, "action")
	for _, a := range menu {
		if k -= w.weight(int(a)); k < 0 {
			return a
		}
	}
	return menu[len(menu)-1]
}

func (w Swarm) weight(a int) int {
	if a >= len(w) {
		return 1
	}
	return w[a]
}

// FewTasks is how many tasks besides t0 most scripts use: enough for every
// race the generators set up, cheap on the kernel side (a task is a
// process).
const FewTasks = 4

// DrawTaskSpan draws the highest task a script's generator names: FewTasks
// for most scripts, ops.MaxTask for one in eight, so that long queues of
// sleepers and scripts with many tasks are drawn too.
func DrawTaskSpan(src Source) int {
	if src.Intn(8, "many tasks") == 0 {
		return ops.MaxTask
	}
	return FewTasks
}

// FreeTasks lists the tasks t1..t<span> that are not asleep: those whose
// entry in asleep (one per task, by a shadow) is the zero value.
func FreeTasks[P comparable](asleep *[ops.NumTasks]P, span int) []uint8 {
	var out []uint8
	var zero P
	for t := 1; t <= span; t++ {
		if asleep[t] == zero {
			out = append(out, uint8(t))
		}
	}
	return out
}
