//go:build linux && amd64

package kernel

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// settlePending settles every pending call until none returns any more: a
// woken sender that gets in may itself hand its message to a sleeping
// receiver, so a round with a return is followed by another. It returns
// the calls that returned, in task order. Only when a whole round finds
// every pending task asleep in its call is nothing left running.
func (ts *tasks) settlePending() ([]ops.Completion, error) {
	var done []ops.Completion
	for {
		progressed := false
		for n, call := range ts.pending {
			if call == nil {
				continue
			}
			returned, err := ts.pool.Current(n).Settle()
			if err != nil {
				return nil, fmt.Errorf("settling task t%d: %w", n, err)
			}
			if !returned {
				continue
			}
			c, err := ts.complete(n)
			if err != nil {
				return nil, err
			}
			done = append(done, c)
			progressed = true
		}
		if !progressed {
			break
		}
	}
	ops.SortCompletions(done)
	return done, nil
}

// complete reads the response of task n's pending call, which has returned.
func (ts *tasks) complete(n int) (ops.Completion, error) {
	call := ts.pending[n]
	ts.pending[n] = nil
	resp, err := ts.pool.Current(n).Collect(call.buf)
	if err != nil {
		return ops.Completion{}, err
	}
	c := ops.Completion{Task: uint8(n), Err: ops.Errno(resp.Errno)}
	if call.kind == ops.KindMsgrcv && resp.Errno == 0 {
		if c.Msg, err = receivedMessage(uintptr(resp.R), call.buf); err != nil {
			return ops.Completion{}, fmt.Errorf("task t%d: %w", n, err)
		}
		c.Recv = true
	}
	return c, nil
}
