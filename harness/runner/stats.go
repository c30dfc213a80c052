package runner

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ScriptStat is what one script's results show about tasks that block.
type ScriptStat struct {
	// BlockedThenCompleted: a task's call blocked and a later operation
	// completed it.
	BlockedThenCompleted bool
	// Race: an operation had several allowed outcomes (woken tasks racing),
	// as the model that computed the results counted them.
	Race bool
}

// ScriptStats reads the statistics of one script from its results. Only the
// operations up to the first race count for BlockedThenCompleted: after a
// race the path depends on the kernel's scheduling, and the same seed must
// give the same statistics.
func ScriptStats(script []ops.Op, results []ops.Result) ScriptStat {
	var st ScriptStat
	var blocked [ops.NumTasks]bool
	for i, r := range results {
		for _, c := range r.Done {
			if int(c.Task) < len(blocked) && blocked[c.Task] {
				st.BlockedThenCompleted = true
				blocked[c.Task] = false
			}
		}
		if r.Blocked && i < len(script) && int(script[i].Task) < len(blocked) {
			blocked[script[i].Task] = true
		}
		if r.Alternatives > 1 {
			st.Race = true
			break
		}
	}
	return st
}

// Stats counts, over a run, the scripts with each property.
type Stats struct {
	BlockedThenCompleted int `json:"blocked_then_completed"`
	Races                int `json:"races"`
}

func (s *Stats) add(script []ops.Op, outs ...ops.Outcome) {
	var any ScriptStat
	for _, o := range outs {
		st := ScriptStats(script, o.Results)
		any.BlockedThenCompleted = any.BlockedThenCompleted || st.BlockedThenCompleted
		any.Race = any.Race || st.Race
	}
	if any.BlockedThenCompleted {
		s.BlockedThenCompleted++
	}
	if any.Race {
		s.Races++
	}
}

// KindTiming is one operation kind's median time inside each side, over
// the operations of that kind the run compared, read from the
// observations (Options.Observe.Time).
type KindTiming struct {
	Kind string `json:"kind"`
	Ops  int    `json:"ops"`
	// MedianNanosA and MedianNanosB are within 1.6% of the true medians
	// (durations).
	MedianNanosA int64 `json:"median_ns_a"`
	MedianNanosB int64 `json:"median_ns_b"`
	// MedianSyscallNanosA and B are the medians of the operations' own
	// system calls' CPU time (Observation.SyscallNanos), 0 for a side that
	// does not measure it.
	MedianSyscallNanosA int64 `json:"median_syscall_ns_a"`
	MedianSyscallNanosB int64 `json:"median_syscall_ns_b"`
}

// TimingLines are Timing for a human, one line per kind: "time inside:
// msgsnd 2612 ops, median naive 2.528µs, optimized 3.296µs", and where a
// side measures its system calls, their median in brackets: "kernel
// 48.64µs (system calls 1.9µs)".
func (r *Result) TimingLines() []string {
	lines := make([]string, len(r.Timing))
	side := func(name string, median, sys int64) string {
		s := fmt.Sprintf("%s %v", name, time.Duration(median))
		if sys > 0 {
			s += fmt.Sprintf(" (system calls %v)", time.Duration(sys).Round(100*time.Nanosecond))
		}
		return s
	}
	for i, k := range r.Timing {
		lines[i] = fmt.Sprintf("time inside: %-12s %8d ops, median %s, %s", k.Kind, k.Ops, side(r.A, k.MedianNanosA, k.MedianSyscallNanosA), side(r.B, k.MedianNanosB, k.MedianSyscallNanosB))
	}
	return lines
}

// SideTotal is what the observations of one side add up to over a run:
// the operations observed, their time inside the side, and the system
// calls the side entered for them, where it counts them (a kernel side
// with the kernel's syscall tracepoint; a model makes none). It says
// where the side's time went: in the operations of t0 (on a kernel, the
// worker thread itself) and in those of tasks t1-t15 (on a kernel, a round
// trip to a task process each), and outside the operations, in the rest
// of the side's calls (a fresh state before each script, its final
// snapshot, packing and the transport).
type SideTotal struct {
	Side        string `json:"side"`
	Ops         int    `json:"ops"`
	InsideNanos int64  `json:"inside_ns"`
	// Syscalls is 0, and Counted false, where the side counted none.
	Syscalls int64 `json:"syscalls"`
	Counted  bool  `json:"syscalls_counted"`
	// SyscallNanos is the CPU time of the operations' own system calls
	// (Observation.SyscallNanos): the kernel's work of the operations, 0
	// where the side does not measure it.
	SyscallNanos int64 `json:"syscall_ns"`
	// TaskOps are the operations of tasks t1-t15, TaskNanos their time
	// inside the side, TaskMedianNanos the median of one (within 1.6%).
	// The rest of Ops and InsideNanos are t0's.
	TaskOps         int   `json:"task_ops"`
	TaskNanos       int64 `json:"task_ns"`
	TaskMedianNanos int64 `json:"task_median_ns"`
	// Calls are the side's calls that ran the scripts compared (a batch
	// each), CallNanos their time, measured by the host around each call:
	// CallNanos - InsideNanos is the time outside the operations.
	Calls     int   `json:"calls"`
	CallNanos int64 `json:"call_ns"`
	// ServerNanos is the time of those calls inside the side, as a plugin
	// reports it (from the request's arrival in its handler to the
	// response built), 0 for a side that reports none (in process):
	// CallNanos - ServerNanos is the transport, ServerNanos - InsideNanos
	// the side's work outside the operations (fresh states, snapshots,
	// packing).
	ServerNanos int64 `json:"server_ns"`
}

// sideTotals adds up each side's observations (A, B), and the time of
// their calls, which the pairs' workers report (callTime) while the
// collector adds the observations (add).
type sideTotals struct {
	mu    sync.Mutex
	sides [2]SideTotal
	task  [2]durations
}

func (t *sideTotals) add(script []ops.Op, outs [2]ops.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for side, o := range outs {
		s := &t.sides[side]
		for i, obs := range o.Observed {
			s.Ops++
			s.InsideNanos += obs.Nanos
			s.Syscalls += obs.Syscalls
			s.SyscallNanos += obs.SyscallNanos
			if obs.Syscalls > 0 {
				s.Counted = true
			}
			if i < len(script) && script[i].Task != 0 {
				s.TaskOps++
				s.TaskNanos += obs.Nanos
				t.task[side].add(obs.Nanos)
			}
		}
	}
}

// callTime records one call of each side (a batch) that took took, of
// which inside inside the side (0 where it does not say).
func (t *sideTotals) callTime(took, inside [2]time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for side, d := range took {
		t.sides[side].Calls++
		t.sides[side].CallNanos += d.Nanoseconds()
		t.sides[side].ServerNanos += inside[side].Nanoseconds()
	}
}

// result is the totals of A and B, named.
func (t *sideTotals) result(a, b string) []SideTotal {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.sides
	out[0].Side, out[1].Side = a, b
	for side := range out {
		out[side].TaskMedianNanos = t.task[side].median()
	}
	return out[:]
}

// SideLines are Sides for a human, two lines per side: "per side: kernel:
// 4826 ops, 1.307s inside them (65% of the run), 16307 system calls
// (8117/s of the run, 3.4 an op)", then where its time went: "  kernel:
// t0 1836 ops 95ms; tasks 2990 ops 1.212s (median 61µs); outside the ops
// 402ms of its 19 calls' 1.709s (fresh state, snapshot, transport)".
func (r *Result) SideLines() []string {
	var lines []string
	for _, s := range r.Sides {
		line := fmt.Sprintf("per side: %s: %d ops, %v inside them", s.Side, s.Ops, time.Duration(s.InsideNanos).Round(time.Millisecond))
		if r.Seconds > 0 {
			line += fmt.Sprintf(" (%.0f%% of the run)", 100*float64(s.InsideNanos)/1e9/r.Seconds)
		}
		switch {
		case !s.Counted:
			line += ", system calls not counted"
		case r.Seconds > 0 && s.Ops > 0:
			line += fmt.Sprintf(", %d system calls (%.0f/s of the run, %.1f an op)", s.Syscalls, float64(s.Syscalls)/r.Seconds, float64(s.Syscalls)/float64(s.Ops))
		default:
			line += fmt.Sprintf(", %d system calls", s.Syscalls)
		}
		lines = append(lines, line)
		ms := func(n int64) time.Duration { return time.Duration(n).Round(time.Millisecond) }
		where := fmt.Sprintf("  %s: t0 %d ops %v; tasks %d ops %v", s.Side, s.Ops-s.TaskOps, ms(s.InsideNanos-s.TaskNanos), s.TaskOps, ms(s.TaskNanos))
		if s.TaskOps > 0 {
			where += fmt.Sprintf(" (median %v)", time.Duration(s.TaskMedianNanos).Round(100*time.Nanosecond))
		}
		if s.SyscallNanos > 0 {
			where += fmt.Sprintf("; in the ops' own system calls %v of CPU", ms(s.SyscallNanos))
		}
		switch {
		case s.Calls > 0 && s.ServerNanos > 0:
			where += fmt.Sprintf("; outside the ops %v of its %d calls' %v: fresh state, snapshot and packing %v, transport %v", ms(max(s.CallNanos-s.InsideNanos, 0)), s.Calls, ms(s.CallNanos), ms(max(s.ServerNanos-s.InsideNanos, 0)), ms(max(s.CallNanos-s.ServerNanos, 0)))
		case s.Calls > 0:
			where += fmt.Sprintf("; outside the ops %v of its %d calls' %v (fresh state, snapshot, transport)", ms(max(s.CallNanos-s.InsideNanos, 0)), s.Calls, ms(s.CallNanos))
		}
		lines = append(lines, where)
	}
	return lines
}

// ThroughputLine is the run's rate for a human: checks and operations a
// second, and the system calls a second of each side that counted them:
// "throughput: 230 checks/s, 6640 ops/s; kernel 125411 system calls/s".
// Empty before a run has a time.
func (r *Result) ThroughputLine() string {
	if r.Seconds <= 0 {
		return ""
	}
	line := fmt.Sprintf("throughput: %.0f checks/s, %.0f ops/s", float64(r.Checks)/r.Seconds, r.OpsPerSec)
	sep := "; "
	for _, s := range r.Sides {
		if s.Counted {
			line += fmt.Sprintf("%s%s %.0f system calls/s", sep, s.Side, float64(s.Syscalls)/r.Seconds)
			sep = ", "
		}
	}
	return line
}

// kindTimes counts the observed times of each kind's operations on each
// side, and the CPU times of their own system calls where a side
// measures them.
type kindTimes map[ops.Kind]*kindDurations

// kindDurations are the times of one kind's operations on each side
// (inside), and of their system calls (syscalls).
type kindDurations struct{ inside, syscalls [2]durations }

// add counts each operation's observed time on each side (A, B); a side
// that sent no observations of the script counts nothing for it.
func (k kindTimes) add(script []ops.Op, outs [2]ops.Outcome) {
	for side, o := range outs {
		if len(o.Observed) != len(script) {
			continue
		}
		for i, obs := range o.Observed {
			d := k[script[i].Kind]
			if d == nil {
				d = &kindDurations{}
				k[script[i].Kind] = d
			}
			d.inside[side].add(obs.Nanos)
			d.syscalls[side].add(obs.SyscallNanos) // all 0 where the side does not measure them
		}
	}
}

// medians are the median times of each kind, in kind order.
func (k kindTimes) medians() []KindTiming {
	out := []KindTiming{}
	for _, kind := range slices.Sorted(maps.Keys(k)) {
		d := k[kind]
		out = append(out, KindTiming{Kind: kind.String(), Ops: max(d.inside[0].n, d.inside[1].n),
			MedianNanosA: d.inside[0].median(), MedianNanosB: d.inside[1].median(),
			MedianSyscallNanosA: d.syscalls[0].median(), MedianSyscallNanosB: d.syscalls[1].median()})
	}
	return out
}

// durations is a histogram of nanoseconds in fixed memory: below 64 one
// bucket per value, above 32 buckets per power of two, so that a bucket's
// middle is within 1/64 (1.6%) of any value in it.
type durations struct {
	n       int
	buckets map[int]int
}

func (d *durations) add(nanos int64) {
	if d.buckets == nil {
		d.buckets = map[int]int{}
	}
	d.n++
	d.buckets[bucketOf(max(nanos, 0))]++
}

// median is the middle of the bucket that holds the median; 0 when empty.
func (d *durations) median() int64 {
	if d.n == 0 {
		return 0
	}
	seen := 0
	for _, b := range slices.Sorted(maps.Keys(d.buckets)) {
		if seen += d.buckets[b]; 2*seen >= d.n {
			return bucketMiddle(b)
		}
	}
	return 0
}

// bucketOf is v's bucket: v itself below 64; above, 32 buckets per power of
// two, numbered on.
func bucketOf(v int64) int {
	if v < 64 {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 6 // v>>e is in [32, 64)
	return 64 + (e-1)*32 + int(v>>e) - 32
}

// bucketMiddle is the middle of bucket b's values.
func bucketMiddle(b int) int64 {
	if b < 64 {
		return int64(b)
	}
	e := (b-64)/32 + 1
	m := int64((b-64)%32 + 32)
	return m<<e + (int64(1)<<e)/2
}
