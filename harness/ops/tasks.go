package ops

import "fmt"

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
)

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
	)
}
