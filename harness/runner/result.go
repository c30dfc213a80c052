package runner

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// NewResult is the result of a run on p before anything ran: the pair's
// names, subsystem, relation and kernels, the run's seed and engine, and
// every list empty (an empty array in JSON, never null).
func NewResult(p *Pair, seed uint64, engine string) *Result {
	return &Result{A: p.A.Name, B: p.B.Name, Subsystem: p.Subsystem, Scripts: []string{}, Findings: []Finding{}, Causes: []Cause{},
		Expected: []Expected{}, StaleKnown: []*corpus.KnownEntry{}, Seed: seed, Engine: engine, Relation: string(p.Relation),
		Kernel: p.KernelRelease(), KernelA: Release(p.A), KernelB: Release(p.B), Events: []Event{}}
}

// Add adds the counts and lists of another run (of another pair, on the
// same scripts) to r: what a chain of pairs found in all. The engine and
// relation become r2's, and its kernel when it has one.
func (r *Result) Add(r2 *Result) {
	r.Checks += r2.Checks
	r.Ops += r2.Ops
	r.Divergences += r2.Divergences
	r.Failures += r2.Failures
	r.Seconds += r2.Seconds
	r.Interrupted = r.Interrupted || r2.Interrupted
	r.Scripts = append(r.Scripts, r2.Scripts...)
	r.Findings = append(r.Findings, r2.Findings...)
	r.Causes = append(r.Causes, r2.Causes...)
	r.Infrastructure += r2.Infrastructure
	r.Events = append(r.Events, r2.Events...)
	r.Unstored += r2.Unstored
	r.Engine, r.Relation = r2.Engine, r2.Relation
	if r2.Kernel != "" {
		r.Kernel = r2.Kernel
	}
}

// Given is the Generate of a run with seed 0 over given scripts: script i
// of the run is scripts[i] (the first for a seed that is no run's).
func Given(scripts [][]ops.Op) func(seed uint64) []ops.Op {
	return func(seed uint64) []ops.Op {
		for i := range scripts {
			if ScriptSeed(0, i) == seed {
				return scripts[i]
			}
		}
		return scripts[0]
	}
}

// SideLabel is a side's name as the user wrote it and, for a kernel side,
// the release that actually ran: "kernel [Linux 6.8.0]".
func SideLabel(name, release string) string {
	if release == "" {
		return name
	}
	return fmt.Sprintf("%s [Linux %s]", name, release)
}

// RunChain runs, for each neighbouring pair of names in turn, the run
// options gives for the pair open opens (closed after its run), and adds
// the results up into one of names[0] against the last name on subsystem.
// An error of open is returned as it is.
func RunChain(ctx context.Context, names []string, subsystem string, open func(a, b string) (*Pair, func(), error), options func(*Pair) Options) (*Result, error) {
	total := NewResult(&Pair{A: Side{Name: names[0]}, B: Side{Name: names[len(names)-1]}, Subsystem: subsystem}, 0, "")
	for i := 1; i < len(names); i++ {
		p, closeAll, err := open(names[i-1], names[i])
		if err != nil {
			return nil, err
		}
		res, err := Run(ctx, options(p))
		closeAll()
		if err != nil {
			return nil, err
		}
		total.Add(res)
	}
	return total, nil
}
