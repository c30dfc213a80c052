package ipcns

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
)

// msgWorkload builds the message-queue workloads on the msgq semantics with
// the model's wake-up policy, and returns the measured part with the
// counters it fills in.
func msgWorkload(w ops.Workload, n int, policy msgq.Policy) (func(), *map[string]int64, error) {
	env := msgq.Env{Policy: policy, Perm: func(uint32, bool) bool { return true }, Msgmax: 8192}
	counters := map[string]int64{}
	switch w {
	case ops.MsgFullQueue:
		// Messages of 8 bytes fill 64 bytes; every sender has 16 bytes, more
		// than one receive frees.
		const unit, slots = 8, 8
		q := msgq.NewQueue(unit * slots)
		msg := func(size int) msgq.Msg { return msgq.Msg{Type: 1, Text: strings.Repeat("m", size)} }
		for range slots {
			_, outs := msgq.Send(q, env, msgq.Waiter{Task: 0, Msg: msg(unit)}, true)
			q = outs[0].Q
		}
		for i := 1; i <= n; i++ {
			call, outs := msgq.Send(q, env, msgq.Waiter{Task: i, Msg: msg(2 * unit)}, false)
			if !call.Blocked {
				return nil, nil, fmt.Errorf("sender %d did not block", i)
			}
			q = outs[0].Q
		}
		part := func() {
			var c msgq.Counters
			for range ops.MsgRounds {
				_, outs := msgq.Receive(q, env, msgq.Waiter{Task: 0, BufSize: unit}, true, false)
				c.Wakeups += outs[0].Counters.Wakeups
				c.Spurious += outs[0].Counters.Spurious
				_, outs = msgq.Send(outs[0].Q, env, msgq.Waiter{Task: 0, Msg: msg(unit)}, true)
				q = outs[0].Q
			}
			counters = map[string]int64{
				"wakeups":              c.Wakeups,
				"spurious":             c.Spurious,
				"receives":             ops.MsgRounds,
				"spurious_per_receive": c.Spurious / ops.MsgRounds,
			}
		}
		return part, &counters, nil
	case ops.MsgPingPong:
		qs := make([]*msgq.Queue, 2*n)
		for i := range qs {
			qs[i] = msgq.NewQueue(16384)
		}
		part := func() {
			var ops_ int64
			for range ops.MsgRounds {
				for i := 0; i < n; i++ {
					for _, q := range []*msgq.Queue{qs[2*i], qs[2*i+1]} {
						_, outs := msgq.Send(q, env, msgq.Waiter{Msg: msgq.Msg{Type: 1, Text: "ping"}}, true)
						_, outs = msgq.Receive(outs[0].Q, env, msgq.Waiter{BufSize: 64}, true, false)
						*q = *outs[0].Q
						ops_ += 2
					}
				}
			}
			counters = map[string]int64{"msg_ops": ops_}
		}
		return part, &counters, nil
	}
	return nil, nil, fmt.Errorf("%s is not a message-queue workload", w)
}
