package ops

import (
	"fmt"
	"strconv"
)

// Operations on tasks, shared by the subsystems whose scripts have tasks
// (shm, msg, sem): they take no IPC type.
const (
	// KindExit ends a task (Op.Task > 0): its attachments are detached,
	// exit_shm runs on the segments it created, and its semaphore
	// adjustments are applied. The task may be used again afterwards, as a
	// new process.
	KindExit Kind = 8 + iota
	// KindInterrupt sends a task a signal (with a handler): a task asleep
	// in semop, msgsnd or msgrcv returns EINTR (a completion of this
	// operation); a task that is not asleep is not disturbed.
	KindInterrupt
	// KindForkTask forks a task (Op.Task > 0) into a free task slot, the
	// child (Op.Value): the child is a new process that inherits the
	// parent's shm attachments (each one more mapping, nattch counting it,
	// lprid the parent), no semaphore undo list (fork does not pass
	// CLONE_SYSVSEM) and no message-queue state. A child slot the script
	// has used since its start or its last exit, or a parent asleep, is
	// EBUSY. t0 (the plugin's own thread on the kernel side) cannot fork.
	KindForkTask
	// KindUnshare moves a task (Op.Task > 0) into a new IPC namespace
	// (unshare(CLONE_NEWIPC), kernel/fork.c ksys_unshare): its semaphore
	// adjustments are applied in the namespace it leaves (exit_sem), the
	// segments it created there are orphaned (exit_shm: destroyed if that
	// namespace has shm_rmid_forced and nothing attaches them), and its
	// attachments stay mapped. The new namespace has ids, keys, limits and
	// <type>_next_id of its own, all at a fresh namespace's values.
	KindUnshare
	// KindSetns moves a task (Op.Task > 0) into the IPC namespace of task
	// Op.Value (setns on its /proc/PID/ns/ipc, kernel/nsproxy.c
	// commit_nsset): its semaphore adjustments are applied (exit_sem), but
	// the segments it created stay its own (no exit_shm: they are orphaned
	// or destroyed only at its exit). t0's namespace is the script's; a
	// task that has not run since its start or last exit is in it too.
	KindSetns
)

// childField is the child task of a fork_task, "t2", held in Op.Value.
type childField struct{}

func (childField) format(o *Op) string { return "t" + strconv.FormatInt(o.Value, 10) }

func (childField) parse(o *Op, text string) error {
	t, err := parseTask(text)
	o.Value = int64(t)
	return err
}

func (childField) zero(o *Op) bool { return o.Value == 0 }

func (childField) plainer(*Op) []func(*Op) { return nil }

func (childField) syntax() string { return "tN" }

// nsField is the task whose IPC namespace a setns enters, "t0", held in
// Op.Value; its plainer value is t0 (the script's namespace).
type nsField struct{ childField }

func (nsField) zero(*Op) bool { return false }

func (nsField) plainer(o *Op) []func(*Op) {
	if o.Value == 0 {
		return nil
	}
	return []func(*Op){func(o *Op) { o.Value = 0 }}
}

// NamespaceOf is the task whose IPC namespace a setns enters.
func (op Op) NamespaceOf() uint8 { return uint8(op.Value) }

// ForkChild is the child task of a fork_task.
func (op Op) ForkChild() uint8 { return uint8(op.Value) }

func init() {
	register(SubsystemSpec{Name: "tasks"},
		KindSpec{Kind: KindExit, Name: "exit", Doc: "end a task: attachments detached, SEM_UNDO applied; its next operation is a new process", Subsystem: "tasks", Task: true,
			Check: func(op Op) error {
				if op.Task == 0 {
					return fmt.Errorf("needs task=tN with N in 1..%d (t0, the main task, cannot exit)", MaxTask)
				}
				return nil
			}},
		KindSpec{Kind: KindInterrupt, Name: "interrupt", Doc: "a signal to a sleeping task: its semop, msgsnd or msgrcv returns EINTR", Subsystem: "tasks", Task: true,
			Check: func(op Op) error {
				if op.Task == 0 {
					return fmt.Errorf("needs task=tN with N in 1..%d (t0, the main task, never sleeps)", MaxTask)
				}
				return nil
			}},
		KindSpec{Kind: KindForkTask, Name: "fork_task", Doc: "fork a task into a free task slot child=tN: attachments inherited (nattch +1 each), no SEM_UNDO list, no message state; EBUSY if the slot was used since the start or its last exit", Subsystem: "tasks", Task: true,
			Args: []Arg{named("child", childField{})},
			Check: func(op Op) error {
				if op.Task == 0 {
					return fmt.Errorf("needs task=tN with N in 1..%d (t0, the main task, cannot fork: on the kernel side it is the plugin's own thread)", MaxTask)
				}
				if op.Value < 1 || op.Value > MaxTask || op.Value == int64(op.Task) {
					return fmt.Errorf("needs child=tN with N in 1..%d, not the forking task", MaxTask)
				}
				return nil
			}},
		KindSpec{Kind: KindUnshare, Name: "unshare", Doc: "a task enters a new IPC namespace (fresh ids, keys, limits, next_id): SEM_UNDO applied, the segments it created orphaned, its attachments kept", Subsystem: "tasks", Task: true,
			Check: func(op Op) error {
				if op.Task == 0 {
					return fmt.Errorf("needs task=tN with N in 1..%d (t0 stays in the script's namespace)", MaxTask)
				}
				return nil
			}},
		KindSpec{Kind: KindSetns, Name: "setns", Doc: "a task enters the IPC namespace of task ns=tM (t0: the script's): SEM_UNDO applied, the segments it created stay its own", Subsystem: "tasks", Task: true,
			Args: []Arg{named("ns", nsField{})},
			Check: func(op Op) error {
				if op.Task == 0 {
					return fmt.Errorf("needs task=tN with N in 1..%d (t0 stays in the script's namespace)", MaxTask)
				}
				if op.Value < 0 || op.Value > MaxTask {
					return fmt.Errorf("needs ns=tM with M in 0..%d", MaxTask)
				}
				return nil
			}},
	)
}
