//go:build linux && amd64

package task

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// EnvSlowdown names the environment variable that says how many times
// slower than natively this kernel runs (a kernel in a VM under software
// emulation: package vm measures it at boot); the adapter's own timeouts
// are multiplied by it. Unset, empty or below 1: 1.
const EnvSlowdown = "IPCFUZZ_SLOWDOWN"

// maxSlowdown bounds the factor EnvSlowdown may give.
const maxSlowdown = 1000

// Slowdown is the factor EnvSlowdown gives.
func Slowdown() float64 {
	f, err := strconv.ParseFloat(os.Getenv(EnvSlowdown), 64)
	if err != nil || !(f >= 1) {
		return 1
	}
	return min(f, maxSlowdown)
}

// settleTimeout is SettleTimeout natively.
const settleTimeout = 10 * time.Second

// SettleTimeout bounds how long a woken task may take to return or to fall
// asleep again; past it the adapter reports an error instead of guessing.
// It is 10 s times Slowdown.
func SettleTimeout() time.Duration {
	return time.Duration(float64(settleTimeout) * Slowdown())
}

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
	timeout := SettleTimeout()
	deadline := time.Now().Add(timeout)
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
			return false, fmt.Errorf("task t%d (pid %d) neither returned nor fell asleep within %v", p.n, p.pid, timeout)
		}
		wait = min(max(2*wait, settleWaitMin), settleWaitMax)
	}
}
