// Package kernel runs the ids, shm, msg and sem subsystems on the real
// Linux kernel: msgget, semget, shmget, their IPC_RMID and IPC_STAT, shmat,
// shmdt and shmctl, msgsnd, msgrcv and msgctl, semop, semtimedop and semctl
// with every command, by several tasks (task.go), the *_next_id, *mni,
// shm_rmid_forced and sem sysctls, and the /proc/sysvipc listings.
//
// A msgsnd, msgrcv or semop of a task t1..t4 may block for real (msg.go,
// sem.go): the task process sleeps in the call, which the adapter decides
// only from evidence (state S and the wchan of the sleeping function,
// blocking.go), never from a sleep; a call with a timeout returns on its
// own and is waited for. After every operation each sleeping task is
// settled again; the calls that returned are that operation's completions.
// An interrupt sends the task a signal it has a handler for, so that the
// call it sleeps in returns EINTR; an exit ends the task's process for
// real (exit_shm, exit_sem).
//
// It never touches the host's IPC namespace. Every syscall of a Model runs on
// one OS thread that is locked to a goroutine for its whole life and that
// moves itself into a private IPC namespace (unshare(CLONE_NEWIPC)) before it
// issues any IPC syscall; each Reset moves it into a fresh one. The other
// threads of the process stay in the host namespace: the Go runtime starts new
// threads from its template thread while the current one is locked, so none is
// ever cloned from the worker, and the worker is never the process's main
// thread (the one thread the runtime keeps, wedged, instead of ending it when
// its locked goroutine ends). Operations run "as" another user switch only
// the worker thread's credentials, with raw per-thread syscalls, and switch
// back before the next operation. When the goroutine ends (Close, or a thread
// that could not restore its credentials) the locked thread exits with it and
// its namespace is freed by the kernel.
//
// Task processes are born in a private namespace and outlive a Reset
// (pool.go): at Reset a task the script used is released (its sleeping
// call interrupted, its segments detached), and its first call of the next
// script joins the new namespace, which drops its undo list; a test proves
// that nothing carries over. A spawner thread keeps spare processes started
// ahead for the incarnations that follow an exit (spawner.go). A task is a
// small freestanding C server where a compiler is found (taskserver.go,
// csrc/taskserver.c), this binary re-executed otherwise; both speak the
// same protocol over two pipes.
//
// Calls reach the worker through atomics: each side polls briefly, yielding
// the CPU, before it parks, so back-to-back operations cost about a
// microsecond of hand-over rather than two thread wake-ups. Model.Run goes
// further and runs a whole script in one hand-over.
//
// Getting a private IPC namespace needs CAP_SYS_ADMIN; without it New and
// Reset fail with one clear error line.
package kernel
