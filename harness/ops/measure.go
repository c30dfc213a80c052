package ops

import "fmt"

// Workload names a cost measurement that runs entirely inside an
// implementation: a setup that builds a state of size n, then a measured part
// timed (and counted) there, so that no RPC time pollutes it.
type Workload string

// The workloads.
const (
	// ProcReadShm: n shm segments live, one full read of /proc/sysvipc/shm.
	ProcReadShm Workload = "proc-read-shm"
	// ProcReadMsg: n message queues live, one full read of /proc/sysvipc/msg.
	ProcReadMsg Workload = "proc-read-msg"
	// ProcReadSem: n semaphore sets live, one full read of /proc/sysvipc/sem.
	ProcReadSem Workload = "proc-read-sem"
	// ProcReadSparse: n queues created, all but every 64th removed, one full read.
	ProcReadSparse Workload = "proc-read-sparse"
	// AllocChurn: n queues live, then ChurnCycles create/remove cycles.
	AllocChurn Workload = "alloc-churn"
	// LookupDepth: queues at idx 1 and idx n-1 (a tree as high as n needs),
	// then LookupRounds IPC_STATs alternating between the two.
	LookupDepth Workload = "lookup-depth"
	// MsgFullQueue: a full queue with n senders asleep on it, each needing
	// more than one receive frees; then MsgRounds rounds of one receive and
	// one non-blocking send that fills the queue again. The counters count
	// sender wake-ups, spurious ones (woken, asleep again) and receives.
	MsgFullQueue Workload = "msg-full-queue"
	// MsgPingPong: n queue pairs, a message sent and received back on each
	// pair per round (pmsg-shared-like), MsgRounds rounds.
	MsgPingPong Workload = "msg-pingpong"
)

// Workloads lists every workload.
var Workloads = []Workload{ProcReadShm, ProcReadMsg, ProcReadSem, ProcReadSparse, AllocChurn, LookupDepth, MsgFullQueue, MsgPingPong, BrkExpand}

// WorkloadSubsystem is the subsystem whose state a workload builds: the
// part of a composed implementation that measures it.
func WorkloadSubsystem(w Workload) string {
	switch w {
	case BrkExpand:
		return "vma"
	case MsgFullQueue, MsgPingPong:
		return "msg"
	}
	return "ids"
}

// Fixed amounts of the measured parts.
const (
	ChurnCycles  = 1024
	LookupRounds = 4096
	MsgRounds    = 64
)

// ParseWorkload checks a workload name.
func ParseWorkload(s string) (Workload, error) {
	for _, w := range Workloads {
		if string(w) == s {
			return w, nil
		}
	}
	return "", fmt.Errorf("unknown workload %q (have %v)", s, Workloads)
}

// MaxMeasureN is the largest size a workload accepts: one object per idx.
const MaxMeasureN = IPCMNI

// CheckMeasure validates the arguments of a measurement.
func CheckMeasure(w Workload, n, reps int) error {
	if _, err := ParseWorkload(string(w)); err != nil {
		return err
	}
	if n < 2 || n > MaxMeasureN {
		return fmt.Errorf("%s: size %d out of range 2..%d (one object per idx)", w, n, MaxMeasureN)
	}
	if reps < 1 || reps > 1000 {
		return fmt.Errorf("%s: %d repetitions out of range 1..1000", w, reps)
	}
	return nil
}

// Measurement is what one workload at one size cost.
type Measurement struct {
	// WallNs has one wall-clock time per repetition of the measured part.
	WallNs []int64
	// Counters is the work the implementation counted in one repetition
	// (deterministic for a model; empty for the kernel).
	Counters map[string]int64
	// Primary names the counter that best measures the work, for fitting.
	Primary string
}

// Measurer is a Model that can run workloads.
type Measurer interface {
	Measure(cfg Config, w Workload, n, reps int) (Measurement, error)
}
