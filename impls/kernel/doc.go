// Package kernel runs the ids, shm, msg and sem subsystems on the real
// Linux kernel: msgget, semget, shmget, their IPC_RMID and IPC_STAT, shmat,
// shmdt and shmctl, msgsnd, msgrcv and msgctl, semop, semtimedop and semctl
// with every command, by several tasks, the *_next_id, *mni,
// shm_rmid_forced and sem sysctls, and the /proc/sysvipc listings.
//
// It is the adapter between the operations' vocabulary (harness/ops) and
// the machinery under internal/, which knows nothing of that vocabulary:
//
//   - internal/worker: the one OS thread every syscall of a Model runs on,
//     locked to its goroutine and in a private IPC namespace of its own,
//     and its hand-over of calls through atomics;
//   - internal/creds: switching that thread (or a task) to another user
//     and back, for an op run "as" another user;
//   - internal/task: the task processes t1..t15, their protocol (a C server
//     or this binary re-executed), their pool and the evidence that a call
//     sleeps;
//   - internal/cbuild: the build of the freestanding C programs and their
//     shared runtime, freestanding.h.
//
// Here, Model (model.go) hands each call to its worker thread, where an ns
// (ns.go) holds what the adapter remembers of the namespace: the tasks
// (tasks.go), the attachments, the sysctls written. apply.go runs an
// operation by its kind, through the subsystem files (ids.go, shm.go,
// msg.go, sem.go), which issue their syscalls through one gateway
// (gateway.go: sys, blockingCall) as a caller, a task and a uid;
// snapshot.go reads the observable state; script.go starts, resets and
// ends the namespace; workload*.go are the workloads of Measure.
//
// A msgsnd, msgrcv or semop of a task t1..t15 may block for real (msg.go,
// sem.go): the task process sleeps in the call, which the adapter decides
// only from evidence (state S and /proc/<pid>/syscall inside the call),
// never from a sleep; a call with a timeout returns on its own and is
// waited for. After every operation each sleeping task is settled again
// (settle.go); the calls that returned are that operation's completions.
// An interrupt sends the task a signal it has a handler for, so that the
// call it sleeps in returns EINTR; an exit ends the task's process for
// real (exit_shm, exit_sem).
//
// It never touches the host's IPC namespace: the worker thread moves itself
// into a private IPC namespace before it issues any IPC syscall, and each
// Reset moves it into a fresh one. Operations run "as" another user switch
// only the worker thread's credentials and switch back before the next
// operation; a thread that cannot is discarded, and the next Reset starts a
// new one. Several Models may share a process (--in-process with several
// jobs): each has its own thread and namespace, and t0's attachments are
// the mappings its own worker made.
//
// Task processes are born in a private namespace and outlive a Reset: at
// Reset a task the script used is released (its sleeping call interrupted,
// its segments detached), and its first call of the next script joins the
// new namespace, which drops its undo list; a test proves that nothing
// carries over.
//
// A task may leave the script's namespace (namespaces.go): unshare has its
// process call unshare(CLONE_NEWIPC), setns has it join another task's
// /proc/PID/ns/ipc (or the worker's). Which namespace each task is in is
// observed at the snapshot (the inode of its /proc/PID/ns/ipc), and each
// other namespace is read on a thread of its own that enters it and is
// thrown away, never on the worker (setns runs exit_sem). The Go task
// refuses both: its threads share one undo list.
//
// Model.Run runs a whole script in one hand-over to the worker thread.
//
// Getting a private IPC namespace needs CAP_SYS_ADMIN; without it New and
// Reset fail with one clear error line.
package kernel
