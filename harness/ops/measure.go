package ops

import (
	"fmt"
	"strings"
	"time"
)

// Workload names a cost measurement that runs entirely inside an
// implementation: a setup that builds a state of size n, then a measured part
// timed (and counted) there, so that no RPC time pollutes it.
type Workload string

// The workloads of the IPC subsystems (BrkExpand is the vma subsystem's).
const (
	ProcReadShm    Workload = "proc-read-shm"
	ProcReadMsg    Workload = "proc-read-msg"
	ProcReadSem    Workload = "proc-read-sem"
	ProcReadSparse Workload = "proc-read-sparse"
	AllocChurn     Workload = "alloc-churn"
	LookupDepth    Workload = "lookup-depth"
	MsgFullQueue   Workload = "msg-full-queue"
	MsgPingPong    Workload = "msg-pingpong"
	SemopDepth     Workload = "semop-depth"
	SemSleepers    Workload = "sem-sleepers"
)

// Fixed amounts of the measured parts.
const (
	ChurnCycles  = 1024
	LookupRounds = 4096
	MsgRounds    = 64
	SemRounds    = 64
)

// WorkloadSpec describes a workload. A plain one is two scripts, a setup
// and a measured part, that every implementation runs through its own
// operations (MeasureScripts); one that needs sleepers by the hundred has
// code of its own in each implementation (Setup is nil).
type WorkloadSpec struct {
	Name      Workload
	Subsystem string // whose state it builds: the part of a composition that runs it
	Doc       string
	// Setup and Measured are the scripts of size n of a plain workload.
	Setup, Measured func(n int) []Op
	// PerRun is how many units (Unit) one run of the measured part does,
	// for a cost per unit in reports (0: none).
	PerRun int
	Unit   string
	// Sizes are the sizes measured when none are given.
	Sizes string
	// MaxN is the largest size it takes.
	MaxN int
	// Levels, when set, is the height of the id radix tree at size n: the
	// report then gives the cost of one more level.
	Levels func(n int) int
}

// Plain reports whether the workload is two scripts.
func (w *WorkloadSpec) Plain() bool { return w.Setup != nil }

// creates is n IPC_PRIVATE objects of type t (shm segments of a page, sem
// arrays of one semaphore), handles h1..hn, with t's limit raised to one
// object per idx.
func creates(t IPCType, n int) []Op {
	out := []Op{{Kind: KindLimit, Type: t, Value: IPCMNI}}
	for i := range n {
		op := Op{Kind: KindGet, Type: t, Bind: i + 1, Mode: 0o600}
		switch t {
		case Shm:
			op.Size = PageSize
		case Sem:
			op.Size = 1
		}
		out = append(out, op)
	}
	return out
}

func listing(t IPCType) func(int) []Op {
	return func(int) []Op { return []Op{{Kind: KindList, Type: t, Rows: true}} }
}

// twoAt places two objects of type t at idx 1 and idx k through
// <type>_next_id, h1 and h2: a tree as high as idx k needs.
func twoAt(t IPCType, k int) []Op {
	size := int64(0)
	if t == Sem {
		size = 1
	}
	return []Op{
		{Kind: KindNextID, Type: t, Value: 1}, {Kind: KindGet, Type: t, Bind: 1, Mode: 0o600, Size: size},
		{Kind: KindNextID, Type: t, Value: int64(k)}, {Kind: KindGet, Type: t, Bind: 2, Mode: 0o600, Size: size},
	}
}

// treeLevels is the height of a 64-way id tree whose largest idx is n.
func treeLevels(n int) int {
	levels := 1
	for n >= MinCycle {
		n /= MinCycle
		levels++
	}
	return levels
}

var workloadSpecs = []WorkloadSpec{
	{Name: ProcReadShm, Subsystem: "ids", Doc: "n shm segments live, one full read of /proc/sysvipc/shm",
		Setup: func(n int) []Op { return creates(Shm, n) }, Measured: listing(Shm), Sizes: "1k..32k", MaxN: IPCMNI},
	{Name: ProcReadMsg, Subsystem: "ids", Doc: "n message queues live, one full read of /proc/sysvipc/msg",
		Setup: func(n int) []Op { return creates(Msg, n) }, Measured: listing(Msg), Sizes: "1k..32k", MaxN: IPCMNI},
	{Name: ProcReadSem, Subsystem: "ids", Doc: "n semaphore arrays live, one full read of /proc/sysvipc/sem",
		Setup: func(n int) []Op { return creates(Sem, n) }, Measured: listing(Sem), Sizes: "1k..32k", MaxN: IPCMNI},
	{Name: ProcReadSparse, Subsystem: "ids", Doc: "n queues created, all but every 64th removed, one full read",
		Setup: func(n int) []Op {
			out := creates(Msg, n)
			for h := 1; h <= n; h++ {
				if (h-1)%64 != 0 {
					out = append(out, Op{Kind: KindRmid, Type: Msg, Obj: Ref{Handle: h}})
				}
			}
			return out
		}, Measured: listing(Msg), Sizes: "1k..32k", MaxN: IPCMNI},
	{Name: AllocChurn, Subsystem: "ids", Doc: fmt.Sprintf("n queues live, then %d create/remove cycles", ChurnCycles),
		Setup:    func(n int) []Op { return creates(Msg, n) },
		Measured: func(int) []Op { return []Op{{Kind: KindChurn, Type: Msg, Value: ChurnCycles}} },
		PerRun:   ChurnCycles, Unit: "cycle", Sizes: "1k..16k", MaxN: IPCMNI - 1},
	{Name: LookupDepth, Subsystem: "ids", Doc: fmt.Sprintf("queues at idx 1 and n-1, then %d IPC_STATs alternating between them", LookupRounds),
		Setup: func(n int) []Op { return twoAt(Msg, n-1) },
		Measured: func(int) []Op {
			out := make([]Op, LookupRounds)
			for i := range out {
				out[i] = Op{Kind: KindStat, Type: Msg, Obj: Ref{Handle: 1 + i%2}}
			}
			return out
		}, PerRun: LookupRounds, Unit: "stat", Sizes: "64..32k", MaxN: IPCMNI,
		Levels: func(n int) int { return treeLevels(n - 1) }},
	{Name: SemopDepth, Subsystem: "ids", Doc: fmt.Sprintf("sem arrays placed at idx 1 and idx n through sem_next_id, then %d no-op semops alternating between them (the 2019 radix-tree cost claim)", LookupRounds),
		Setup: func(n int) []Op { return twoAt(Sem, n) },
		Measured: func(int) []Op {
			out := make([]Op, LookupRounds)
			for i := range out {
				out[i] = Op{Kind: KindSemop, Type: Sem, Obj: Ref{Handle: 1 + i%2}, Sem: SemArgs{NSops: 1, Sops: [SemMaxSops]Sop{{Flags: SemNowait}}}}
			}
			return out
		}, PerRun: LookupRounds, Unit: "semop", Sizes: "2,40,3348,27348", MaxN: IPCMNI - 1, Levels: treeLevels},
	{Name: MsgFullQueue, Subsystem: "msg", Sizes: "16..1024", MaxN: IPCMNI,
		Doc: fmt.Sprintf("a full queue, n senders asleep each needing more than one receive frees, then %d receive/refill rounds (wake-ups counted; on the kernel, the senders' context switches read from /proc)", MsgRounds)},
	{Name: MsgPingPong, Subsystem: "msg", Sizes: "16..1024", MaxN: IPCMNI,
		Doc: fmt.Sprintf("n queue pairs, a message sent and received back on each pair per round, %d rounds (pmsg-shared-like)", MsgRounds)},
	{Name: SemSleepers, Subsystem: "sem", Sizes: "16..1024", MaxN: IPCMNI, PerRun: SemRounds, Unit: "round",
		Doc: fmt.Sprintf("n tasks asleep each on its own semaphore of one array; %d rounds of a +1 that completes one of them, which sleeps again", SemRounds)},
	{Name: BrkExpand, Subsystem: "vma", Sizes: "16..4096", MaxN: 1 << 15, PerRun: BrkExpandCalls, Unit: "brk",
		Doc: fmt.Sprintf("n VMAs in the address space, then %d rounds of a brk up by one page and back down (aim9 brk_test-like)", BrkRounds)},
}

// Workloads lists every workload.
var Workloads = func() []Workload {
	out := make([]Workload, len(workloadSpecs))
	for i, w := range workloadSpecs {
		out[i] = w.Name
	}
	return out
}()

// WorkloadOf returns a workload's description.
func WorkloadOf(w Workload) (*WorkloadSpec, error) {
	for i := range workloadSpecs {
		if workloadSpecs[i].Name == w {
			return &workloadSpecs[i], nil
		}
	}
	names := make([]string, len(Workloads))
	for i, n := range Workloads {
		names[i] = string(n)
	}
	return nil, fmt.Errorf("unknown workload %q (have %s)", clip(string(w)), strings.Join(names, ", "))
}

// WorkloadSubsystem is the subsystem whose state a workload builds: the
// part of a composed implementation that measures it.
func WorkloadSubsystem(w Workload) string {
	if IsPattern(w) {
		p, err := PatternOf(w)
		if err != nil {
			return ""
		}
		return p.Subsystem
	}
	if s, err := WorkloadOf(w); err == nil {
		return s.Subsystem
	}
	return ""
}

// ParseWorkload checks a workload name.
func ParseWorkload(s string) (Workload, error) {
	w, err := WorkloadOf(Workload(s))
	if err != nil {
		return "", err
	}
	return w.Name, nil
}

// MaxMeasureN is the largest size any workload takes.
const MaxMeasureN = 1 << 15

// CheckMeasure validates the arguments of a measurement.
func CheckMeasure(w Workload, n, reps int) error {
	if IsPattern(w) {
		p, err := PatternOf(w)
		if err != nil {
			return err
		}
		if n < 1 || n > p.MaxN() {
			return fmt.Errorf("pattern: size %d out of range 1..%d", n, p.MaxN())
		}
		if reps < 1 || reps > 1000 {
			return fmt.Errorf("pattern: %d repetitions out of range 1..1000", reps)
		}
		return nil
	}
	s, err := WorkloadOf(w)
	if err != nil {
		return err
	}
	if n < 2 || n > s.MaxN {
		return fmt.Errorf("%s: size %d out of range 2..%d", w, n, s.MaxN)
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
	// (deterministic for a model; for the kernel, empty but for what a
	// workload reads from /proc, as msg-full-queue's sender wake-ups).
	Counters map[string]int64
	// Primary names the counter that best measures the work, for fitting.
	Primary string
}

// Measurer is a Model that can run workloads.
type Measurer interface {
	Measure(cfg Config, w Workload, n, reps int) (Measurement, error)
}

// Counting is a Model that counts its own work (slots probed, tree nodes
// visited), for the complexity engine.
type Counting interface {
	Counters() map[string]int64
	// PrimaryCounter names the counter that best measures the work.
	PrimaryCounter() string
}

// MeasureScripts measures a plain workload on m: a reset with cfg, the
// setup script, then the measured script reps times, each timed, the
// counters (when m counts) of the first repetition. Handles persist from
// the setup to the measured part. A pattern workload is measured by
// MeasurePattern.
func MeasureScripts(m Model, cfg Config, w Workload, n, reps int) (Measurement, error) {
	if err := CheckMeasure(w, n, reps); err != nil {
		return Measurement{}, err
	}
	if IsPattern(w) {
		p, err := PatternOf(w)
		if err != nil {
			return Measurement{}, err
		}
		return MeasurePattern(m, cfg, p, n, reps)
	}
	spec, _ := WorkloadOf(w)
	if !spec.Plain() {
		return Measurement{}, fmt.Errorf("%s needs code of its own in each implementation", w)
	}
	if err := m.Reset(cfg); err != nil {
		return Measurement{}, fmt.Errorf("reset: %w", err)
	}
	h := Handles{}
	if err := applyAll(m, h, spec.Setup(n), true); err != nil {
		return Measurement{}, fmt.Errorf("%s setup at n=%d: %w", w, n, err)
	}
	measured := make([]Op, 0, len(spec.Measured(n)))
	for _, op := range spec.Measured(n) {
		measured = append(measured, h.Resolve(op))
	}
	c, counts := m.(Counting)
	res := Measurement{WallNs: make([]int64, reps)}
	for i := range reps {
		var before map[string]int64
		if counts {
			before = c.Counters()
		}
		start := time.Now()
		if err := applyAll(m, nil, measured, false); err != nil {
			return Measurement{}, fmt.Errorf("%s at n=%d: %w", w, n, err)
		}
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if i == 0 && counts {
			res.Counters, res.Primary = map[string]int64{}, c.PrimaryCounter()
			for k, v := range c.Counters() {
				res.Counters[k] = v - before[k]
			}
		}
	}
	return res, nil
}

// applyAll applies a script; with check, an errno fails it (a setup must
// build what it means to).
func applyAll(m Model, h Handles, script []Op, check bool) error {
	for i, op := range script {
		if h != nil {
			op = h.Resolve(op)
		}
		r, err := m.Apply(op)
		if err != nil {
			return fmt.Errorf("op %d (%s): %w", i+1, FormatOp(op), err)
		}
		if check && r.Err != OK {
			return fmt.Errorf("op %d (%s): %s", i+1, FormatOp(op), r.Err)
		}
		if h != nil {
			h.Record(script[i], r)
		}
	}
	return nil
}
