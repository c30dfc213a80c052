//go:build linux && amd64

package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNoFork is the refusal of a fork by the Go task, which cannot fork (a
// Go runtime's threads do not survive one).
var ErrNoFork = errors.New("the Go task cannot fork: fork_task needs the C task server (a C compiler)")

// Fork forks the task's process into a new task process, task n: a child
// of the owner's thread (CLONE_PARENT), so that its parent-death signal
// fires with it and the owner reaps it. The child inherits what a forked
// process inherits (the shm attachments; no semaphore undo list) and
// serves on pipes of its own, whose owner ends are taken from the task
// with pidfd_getfd. The child is in the task's namespace.
func (p *Proc) Fork(n int) (*Proc, error) {
	if p.isGo() {
		return nil, ErrNoFork
	}
	payload := make([]byte, 16)
	resp, err := p.Call(&Req{Kind: KindFork}, payload)
	if err != nil {
		return nil, err
	}
	if resp.Errno != 0 {
		return nil, fmt.Errorf("task t%d (pid %d): fork: %w", p.n, p.pid, unix.Errno(resp.Errno))
	}
	pid := int(resp.R)
	// The child's address space is the task's copy: its shm window (the
	// guard pages) is there if the task's was.
	child := &Proc{n: n, pid: pid, ns: p.ns, req: -1, resp: -1, files: procFiles{pid: pid, stat: -1, syscall: -1}, Window: p.Window, cover: p.cover, timing: p.timing}
	if child.forked, err = os.FindProcess(pid); err == nil {
		child.req, child.resp, err = p.takeForkEnds(payload)
	}
	if _, derr := p.Call(&Req{Kind: KindForkDone}, nil); err == nil {
		err = derr
	}
	if err != nil {
		if child.forked != nil {
			child.Kill()
		} else {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return nil, fmt.Errorf("task t%d (pid %d): fork: %w", p.n, p.pid, err)
	}
	return child, nil
}

// takeForkEnds takes the task's ends of the fork's pipes (their fds in
// payload) into this process.
func (p *Proc) takeForkEnds(payload []byte) (req, resp int, err error) {
	pidfd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	le := binary.LittleEndian
	if req, err = unix.PidfdGetfd(pidfd, int(le.Uint64(payload[0:])), 0); err != nil {
		return -1, -1, fmt.Errorf("pidfd_getfd: %w", err)
	}
	if resp, err = unix.PidfdGetfd(pidfd, int(le.Uint64(payload[8:])), 0); err != nil {
		unix.Close(req)
		return -1, -1, fmt.Errorf("pidfd_getfd: %w", err)
	}
	return req, resp, nil
}
