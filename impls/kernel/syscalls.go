//go:build linux && amd64

package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/syscount"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// sysState is the worker thread's syscall counter: opened on the thread
// the first time a run asks for times (Config.Observe.Time), kept for the
// thread's life, closed on it when it ends (ns.close). It counts the
// thread's calls and those of the task processes it starts after that.
// Where the kernel offers no counter, Observation.Syscalls stays 0 and
// Open is not tried again.
type sysState struct {
	counter *syscount.Counter
	tried   bool
}

// syscallCounter returns the thread's counter, opening it; nil where there
// is none. It runs on the worker thread.
func (n *ns) syscallCounter() *syscount.Counter {
	if !n.sys.tried {
		n.sys.tried = true
		if c, err := syscount.Open(); err == nil {
			n.sys.counter = c
		}
	}
	return n.sys.counter
}

// closeSyscallCounter stops counting; it runs on the thread, last.
func (n *ns) closeSyscallCounter() {
	if n.sys.counter != nil {
		_ = n.sys.counter.Close()
		n.sys.counter = nil
	}
}

// counting is a model on the worker thread whose operations are measured,
// one measure per operation: the system calls entered (the counter c,
// where the kernel offers one; its second read and the timing's clock
// reads left out), and the CPU
// time of the operation's own syscalls, the worker thread's and its tasks'
// (the pool's timing t, on during the operation alone).
type counting struct {
	ops.Model
	c     *syscount.Counter
	t     *task.Timing
	n     []int64
	nanos []int64
}

func (c *counting) Apply(op ops.Op) (ops.Result, error) {
	var before, after int64
	var errB, errA error
	if c.c != nil {
		before, errB = c.c.Read()
	}
	c.t.On, c.t.Nanos, c.t.Reads = true, 0, 0
	r, err := c.Model.Apply(op)
	c.t.On = false
	c.nanos = append(c.nanos, c.t.Nanos)
	if c.c != nil {
		after, errA = c.c.Read()
	}
	n := after - before - 1 - c.t.Reads
	if c.c == nil || errB != nil || errA != nil || n < 0 {
		n = 0
	}
	c.n = append(c.n, n)
	return r, err
}

// fill writes the measures into out's observations (none for a nil c) and
// returns err, for the caller's return.
func (c *counting) fill(out ops.Outcome, err error) error {
	if c == nil {
		return err
	}
	for i, n := range c.n {
		if i < len(out.Observed) {
			out.Observed[i].Syscalls = n
			out.Observed[i].SyscallNanos = c.nanos[i]
		}
	}
	return err
}

// clock is the timing of the operations' system calls (on while an
// operation is measured): the worker thread's own go through it, in
// Begin and End, as the task processes' answers do.
func (n *ns) clock() *task.Timing { return n.tasks.pool.Time() }
