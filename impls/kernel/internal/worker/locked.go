//go:build linux && amd64

package worker

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// GoLocked runs f on a new goroutine locked to an OS thread that is not the
// process's main thread. f must not unlock it: when f returns, the runtime
// terminates the thread instead of reusing it, so neither a namespace nor a
// credential change made there can leak to other goroutines. The main
// thread is avoided because it is never terminated: a locked goroutine that
// ends there wedges it for good instead, namespace and all.
func GoLocked(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		// While this goroutine holds the main thread, the new one
		// cannot be scheduled on it.
		started := make(chan struct{})
		GoLocked(func() {
			close(started)
			f()
		})
		<-started
		runtime.UnlockOSThread()
	}()
}

// EnterNewNamespace moves the calling thread into a new, empty IPC
// namespace. The previous one is freed by the kernel once no task refers
// to it.
func EnterNewNamespace() error {
	err := unix.Unshare(unix.CLONE_NEWIPC)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w); run as root: it needs CAP_SYS_ADMIN", err)
	case errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w); /proc/sys/user/max_ipc_namespaces is reached", err)
	}
	return fmt.Errorf("kernel: cannot get a private IPC namespace (unshare CLONE_NEWIPC: %w)", err)
}
