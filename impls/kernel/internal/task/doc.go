// Package task runs the task processes of the kernel adapter: tasks
// t1..t15 of a script are real processes, because attachments, nattch,
// semaphore undo lists and the exit of a task are per process, so a thread
// would not do. It knows the syscalls a task may run, not what they mean.
//
// A task speaks the protocol of protocol.go over two pipes: a request
// runs one SysV IPC syscall (optionally as another user, optionally
// interruptible by a signal, optionally traced with KCOV: FlagCover, the
// program counters following the answer, gathered by Pool.Cover while the
// owner has it on) or joins an IPC namespace. The process is
// the C server of csrc/taskserver.c where a compiler is found
// (cserver.go), this very binary re-executed otherwise (the Go task of
// server.go); both behave the same.
//
// A task is started from the worker thread, at the first operation that
// needs it (Pool). It is forked from that thread, so it is born in the
// worker's private IPC namespace; it checks that its namespace is the one
// the worker named in EnvNamespace before it serves anything. Its
// parent-death signal (SIGKILL) fires when the worker thread ends: at
// Close, or when the process hosting the model dies, even by SIGKILL. A
// task outlives a Reset (pool.go): it drops what it holds and joins the
// next namespace when a later script first uses it; a spawner thread keeps
// spare processes started ahead for the incarnations that follow an exit
// (spawner.go).
//
// A call that may block is started without waiting (Proc.Start), and
// whether the task sleeps in it is decided from evidence only: state S and
// /proc/<pid>/syscall inside the call (Proc.Settle), never a sleep.
package task
