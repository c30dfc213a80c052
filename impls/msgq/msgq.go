// Package msgq holds the semantics of one SysV message queue (ipc/msg.c)
// for the models: the search modes, the fits test that also counts messages
// against qbytes, pipelined send to the first matching sleeping receiver,
// E2BIG for receivers whose buffer is too small, and the sender wake-up, in
// two policies: WakeAll (before 4.9: every receive wakes every sleeping
// sender) and WakeFits (4.9 and later: only senders whose message now fits
// are woken, the others rotate to the tail). The policies differ in the work
// counted, not in what a program sees: a sender WakeAll wakes while its
// message does not fit goes back to sleep before it re-checks its
// permission, as the current kernel leaves it asleep. (Before 4.9 the
// re-check came first: a sender whose write permission IPC_SET took away
// got EACCES at the next wake-up; since 4.9 only once its message fits.
// corpus/msg/sender-permission-revoked-*.ops.)
//
// Woken tasks race for the queue lock, so an operation can have several
// allowed outcomes. Step enumerates every order in which the woken tasks may
// run and returns each distinct outcome; the models keep every state still
// consistent with what was observed (see Candidates).
package msgq

import (
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Msg is one message: its type and its text.
type Msg struct {
	Type int64
	Text string
}

// Size is the message's msgsz.
func (m Msg) Size() int64 { return int64(len(m.Text)) }

// Mode is how msgrcv searches (SEARCH_* in ipc/msg.c).
type Mode uint8

// The search modes.
const (
	Any Mode = iota
	Equal
	NotEqual
	LessEqual
	Number // MSG_COPY: msgtyp is a position
)

// SearchMode turns msgtyp and the flags into a mode and a bound.
func SearchMode(msgtyp int64, except, copyMsg bool) (Mode, int64) {
	switch {
	case copyMsg:
		return Number, msgtyp
	case msgtyp == 0:
		return Any, 0
	case msgtyp < 0:
		if msgtyp == -1<<63 {
			return LessEqual, 1<<63 - 1
		}
		return LessEqual, -msgtyp
	case except:
		return NotEqual, msgtyp
	}
	return Equal, msgtyp
}

func accepts(mode Mode, bound int64, m Msg) bool {
	switch mode {
	case Equal:
		return m.Type == bound
	case NotEqual:
		return m.Type != bound
	case LessEqual:
		return m.Type <= bound
	}
	return true
}

// Waiter is a task asleep on the queue.
type Waiter struct {
	Task int
	Pid  int    // what q_lspid / q_lrpid record for it (the model's task identity)
	As   uint32 // its credentials (0: root)
	// A sender's message.
	Msg Msg
	// A receiver's search.
	Mode    Mode
	Bound   int64
	BufSize int64 // the caller's msgsz
	NoError bool  // MSG_NOERROR: truncate instead of E2BIG
	// BadBuf: the caller's buffer is unmapped; the copy-out after the
	// message was taken fails, so the message is lost and the call returns
	// EFAULT (ipc-spec.md 2.4, step 6).
	BadBuf bool
}

// got is the completion of receiver w that took m.
func (w Waiter) got(m Msg) Completion {
	if w.BadBuf {
		return Completion{Task: w.Task, Err: ops.EFAULT}
	}
	return Completion{Task: w.Task, Msg: truncate(m, w.BufSize)}
}

func (w Waiter) maxSize() int64 {
	if w.NoError {
		return 1<<31 - 1
	}
	return w.BufSize
}

// Queue is the state of one queue (struct msg_queue) as far as the models
// need it. Pids are what the waiters carry (Waiter.Pid), 0 for none; times
// are set or not.
type Queue struct {
	Msgs      []Msg
	Cbytes    int64
	Qbytes    int64
	Receivers []Waiter
	Senders   []Waiter
	Lspid     int
	Lrpid     int
	Stime     bool
	Rtime     bool
	Quirks    Quirk
}

// NewQueue returns an empty queue of capacity qbytes (msgmnb at creation).
func NewQueue(qbytes int64) *Queue { return &Queue{Qbytes: qbytes} }

func (q *Queue) clone() *Queue {
	c := *q
	c.Msgs = append([]Msg(nil), q.Msgs...)
	c.Receivers = append([]Waiter(nil), q.Receivers...)
	c.Senders = append([]Waiter(nil), q.Senders...)
	return &c
}

// Qnum is the number of queued messages.
func (q *Queue) Qnum() int64 { return int64(len(q.Msgs)) }

// fits is msg_fits_inqueue: the bytes and the message count against qbytes.
func (q *Queue) fits(size int64) bool {
	if q.Quirks&QuirkFitsStrict != 0 {
		return size+q.Cbytes < q.Qbytes && q.Qnum()+1 < q.Qbytes
	}
	return size+q.Cbytes <= q.Qbytes && q.Qnum()+1 <= q.Qbytes
}

// Quirk is a deliberate deviation from the kernel. Mutation tests build
// models with quirks to prove that the harness finds and shrinks such bugs;
// the built-in models have none.
type Quirk uint8

// The quirks.
const (
	QuirkFitsStrict    Quirk = 1 << iota // the fits test with < instead of <=
	QuirkReceiversLIFO                   // pipelined send serves the newest receiver first
	QuirkE2BIGStays                      // a receiver too small for a message stays asleep instead of E2BIG
)

// Completion is a task that was asleep and whose call returned during an
// operation: a sender (Err only) or a receiver (Err, or the message it got).
type Completion struct {
	Task int
	Err  ops.Errno
	Msg  Msg // a receiver's message, truncated to what it could take
}

// Counters count the wake-ups of senders.
type Counters struct {
	Wakeups  int64 // senders woken
	Spurious int64 // senders woken that went back to sleep
	Requeues int64 // senders moved to the tail
}

// Policy is the sender wake-up policy.
type Policy uint8

// The policies.
const (
	WakeFits Policy = iota // 4.9 and later (ss_wakeup with msg_fits_inqueue)
	WakeAll                // before 4.9
)

// Perm answers whether a caller (as) may read or write the queue now.
type Perm func(as uint32, write bool) bool

// Outcome is one allowed result of an operation.
type Outcome struct {
	Q        *Queue
	Done     []Completion // sorted by task
	Counters Counters
	// Racing is set when more than one woken task could change the outcome by
	// running first: the kernel's choice is up to the scheduler.
	Racing bool
}

// Key is a canonical text of the observable part of an outcome (the
// completions and the queue), for deduplication and matching.
func (o Outcome) Key() string {
	var b strings.Builder
	for _, c := range o.Done {
		b.WriteString(c.key())
	}
	b.WriteString("|")
	b.WriteString(o.Q.key())
	return b.String()
}

func (c Completion) key() string {
	return ops.Errno(c.Err).String() + ":" + itoa(int64(c.Task)) + ":" + itoa(c.Msg.Type) + ":" + c.Msg.Text + ";"
}

func (q *Queue) key() string {
	var b strings.Builder
	for _, m := range q.Msgs {
		b.WriteString(itoa(m.Type) + "/" + m.Text + ",")
	}
	b.WriteString("|")
	for _, w := range q.Senders {
		b.WriteString(itoa(int64(w.Task)) + ",")
	}
	b.WriteString("|")
	for _, w := range q.Receivers {
		b.WriteString(itoa(int64(w.Task)) + ",")
	}
	b.WriteString("|" + itoa(q.Cbytes) + "|" + itoa(q.Qbytes) + "|" + itoa(int64(q.Lspid)) + "|" + itoa(int64(q.Lrpid)))
	if q.Stime {
		b.WriteString("s")
	}
	if q.Rtime {
		b.WriteString("r")
	}
	return b.String()
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	var buf [24]byte
	i := len(buf)
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for u > 0 {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

func sortDone(d []Completion) {
	sort.SliceStable(d, func(i, j int) bool { return d[i].Task < d[j].Task })
}
