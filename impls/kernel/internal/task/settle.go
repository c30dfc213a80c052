//go:build linux && amd64

package task

import (
	"fmt"
	"time"
)

// SettleTimeout bounds how long a woken task may take to return or to fall
// asleep again; past it the adapter reports an error instead of guessing.
const SettleTimeout = 10 * time.Second

// Between two looks at /proc, Settle waits for the response in ppoll, from
// settleWaitMin doubling up to settleWaitMax: a task that returns is seen
// at once, one that falls asleep within settleWaitMax (plus a /proc read),
// and the worker leaves the CPU to the task meanwhile, which matters on a
// busy machine, where spinning would only delay the task it waits for.
const (
	settleWaitMin = 10 * time.Microsecond
	settleWaitMax = 200 * time.Microsecond
)

// Settle waits until the task has either returned from the started call
// (true) or is asleep in it (false): evidence (evidence.go), not a delay.
func (p *Proc) Settle() (returned bool, err error) {
	deadline := time.Now().Add(SettleTimeout)
	var wait time.Duration
	for {
		if ok, err := p.ReadyWithin(wait); err != nil || ok {
			return ok, err
		}
		if ok, err := p.files.asleep(); err != nil || ok {
			// Asleep now; a response written just before cannot be missed,
			// since a task that returned is not asleep in the call.
			if err == nil {
				if r, rerr := p.Ready(); rerr == nil && r {
					return true, nil
				}
			}
			return false, err
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("task t%d (pid %d) neither returned nor fell asleep within %v", p.n, p.pid, SettleTimeout)
		}
		wait = min(max(2*wait, settleWaitMin), settleWaitMax)
	}
}
