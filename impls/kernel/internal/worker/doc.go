// Package worker is the one OS thread every syscall of a kernel Model runs
// on, and the locked threads beside it. It knows nothing of IPC objects or
// of the operations' vocabulary.
//
// A Thread is locked to its goroutine for its whole life and moves itself
// into a private IPC namespace (unshare(CLONE_NEWIPC)) before it runs
// anything; its owner moves it into a fresh one at each Reset
// (EnterNewNamespace). The other threads of the process stay in the host
// namespace: the Go runtime starts new threads from its template thread
// while the current one is locked, so none is ever cloned from the worker,
// and the worker is never the process's main thread (the one thread the
// runtime keeps, wedged, instead of ending it when its locked goroutine
// ends: GoLocked). Calls run "as" another user (AsUser) switch only the
// thread's credentials, with raw per-thread syscalls (package creds), and
// switch back before the next call. When the goroutine ends (Stop, or a
// thread that could not restore its credentials) the locked thread exits
// with it and its namespace is freed by the kernel.
//
// Calls reach the thread through atomics: each side polls briefly,
// yielding the CPU, before it parks, so back-to-back calls cost about a
// microsecond of hand-over rather than two thread wake-ups.
//
// Getting a private IPC namespace needs CAP_SYS_ADMIN; without it Start
// and EnterNewNamespace fail with one clear error line.
package worker
