//go:build linux && amd64

package task

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Timing is the CPU time of the system calls of a pool's operations: its
// task calls and the worker thread's own. While On is set, every call a
// task of the pool is asked to run carries FlagTime, and the time of its
// syscall (Resp.Nanos) is added to Nanos as its response is collected:
// that of a call that slept comes with whichever Collect reads its
// answer. The worker thread times its own syscalls with Begin and End.
// Reads counts the clock reads the timing took, the tasks' (Resp.Clocks)
// and the worker's: system calls a count of the operation's leaves out.
// Its owner (the worker thread) zeroes Nanos and Reads when it likes.
type Timing struct {
	On    bool
	Nanos int64
	Reads int64
	clock CPUClock
}

// Begin starts timing a syscall of the pool's worker thread, the calling
// thread: it returns the thread's CPU time while t is on, 0 otherwise (t
// may be nil), for End.
func (t *Timing) Begin() int64 {
	if t == nil || !t.On {
		return 0
	}
	before := t.clock.Reads
	t.clock.Cost() // measured before the first read it corrects
	start := t.clock.Now()
	t.Reads += t.clock.Reads - before
	return start
}

// End adds to Nanos the calling thread's CPU time since Begin returned
// start, less what the two reads take.
func (t *Timing) End(start int64) {
	if t == nil || !t.On || start == 0 {
		return
	}
	t.Nanos += max(t.clock.Now()-start-t.clock.Cost(), 0)
	t.Reads++
}

// CPUClock reads the calling thread's CPU time, to time a syscall: what
// lies between the reads around it, less what two reads alone take (Cost).
// A syscall's CPU time leaves out any time it slept. Reads counts the
// clock's reads, each a system call.
type CPUClock struct {
	Reads    int64
	cost     int64
	measured bool
}

// costPairs is how many pairs of reads Cost takes the least of.
const costPairs = 4

// Now is the calling thread's CPU time in nanoseconds (0 where it cannot
// be read).
func (c *CPUClock) Now() int64 {
	c.Reads++
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}

// Cost is what two reads of the clock alone measure (the end of the first
// and the start of the second): the least of costPairs pairs, measured at
// the first call, on the calling thread.
func (c *CPUClock) Cost() int64 {
	if !c.measured {
		c.measured, c.cost = true, 1<<62
		for range costPairs {
			a := c.Now()
			c.cost = min(c.cost, c.Now()-a)
		}
	}
	return c.cost
}
