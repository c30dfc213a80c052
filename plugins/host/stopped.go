package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// StoppedGrace is how long a plugin's process may stay stopped (SIGSTOP
// from outside, a debugger) while a call waits on it before the call is
// given up: a stopped guest answers nothing until the call timeout, which
// for a guest under TCG is minutes.
const StoppedGrace = 3 * time.Second

// errStopped is the cause of a call given up because its plugin's process
// stayed stopped.
var errStopped = fmt.Errorf("its process stayed stopped for %v (SIGSTOP from outside, or a debugger)", StoppedGrace)

// watchStopped cancels a call (with errStopped) whose plugin process pid
// stays stopped for StoppedGrace; it returns when ctx ends.
func watchStopped(ctx context.Context, pid int, cancel context.CancelCauseFunc) {
	if pid <= 0 {
		return
	}
	t := time.NewTicker(StoppedGrace / 6)
	defer t.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			stopped, err := processStopped(pid)
			switch {
			case err != nil || !stopped:
				since = time.Time{}
			case since.IsZero():
				since = now
			case now.Sub(since) >= StoppedGrace:
				cancel(errStopped)
				return
			}
		}
	}
}

// processStopped reports whether process pid is stopped (state T or t in
// /proc/PID/stat).
func processStopped(pid int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, err
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false, errors.New("unreadable /proc/PID/stat")
	}
	st := b[i+2]
	return st == 'T' || st == 't', nil
}
