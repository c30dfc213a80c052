package ops

// The side channel: what a run observes of each operation beside its
// result. An observation is a measurement of the implementation (how long
// the operation took, which kernel code it reached), not an answer of it,
// so it is never part of equality: it lives in its own type, out of Result
// and Snapshot, and nothing that compares (harness/equiv, the runner's
// same-bytes path, the canonical text) reads it.

// Observation is what was seen of one operation where it was applied,
// inside the implementation (the plugin process, or the guest).
type Observation struct {
	// Nanos is the operation's time inside the implementation, measured
	// around the call that applies it (Observing.Time); 0 when not asked.
	Nanos int64
	// PCs are the kernel program counters the operation reached (KCOV),
	// each once, in the order the kernel first reported it (FirstSeen);
	// nil unless the run asked for coverage (Observing.Cover) and the
	// side collects it.
	PCs []uint64
	// Syscalls is how many system calls the implementation entered for
	// the operation (its own, and its task processes'), counted by the
	// kernel where the side can count them (Observing.Time); 0 otherwise.
	Syscalls int64
	// SyscallNanos is the CPU time of the operation's own system calls
	// (those the operation is, not the adapter's plumbing around them:
	// transport, namespaces, clean-up), each timed in the thread that made
	// it by its CPU clock, where the side measures it (Observing.Time);
	// 0 otherwise. A call that slept counts the CPU it used, not its sleep.
	SyscallNanos int64
}

// Observing says which observations a run asks for (Config.Observe). The
// zero value asks for none, and then nothing is measured: no clock is
// read and Outcome.Observed stays nil.
type Observing struct {
	Time  bool // Observation.Nanos, and Observation.Syscalls and SyscallNanos where measured
	Cover bool // Observation.PCs
}

// Any reports whether anything is asked for.
func (o Observing) Any() bool { return o.Time || o.Cover }

// FirstSeen returns the first of each program counter of pcs, in order,
// in a slice of its own (pcs, often a reused buffer, is left as it was): a
// loop in the kernel reports its blocks on every turn, and an operation's
// trace of tens of thousands of counters holds a few hundred distinct
// ones. (Kept whole, a batch's traces filled a 512 MB guest until its OOM
// killer ended the plugin.)
func FirstSeen(pcs []uint64) []uint64 {
	seen := make(map[uint64]struct{}, 256)
	var out []uint64
	for _, pc := range pcs {
		if _, ok := seen[pc]; !ok {
			seen[pc] = struct{}{}
			out = append(out, pc)
		}
	}
	return out
}
