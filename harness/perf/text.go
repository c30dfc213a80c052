package perf

import (
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// WriteText writes a run's summary line and one line per finding, as
// compare --perf prints them.
func (r *Result) WriteText(w io.Writer) {
	note := ""
	if r.Interrupted {
		note = " (interrupted)"
	}
	fmt.Fprintf(w, "%s vs %s (%s, --perf, seed %d, sizes %v, threshold n^%g): %d scripts, %d patterns judged in %.1fs: %d performance findings%s\n",
		runner.SideLabel(r.A, r.KernelA), runner.SideLabel(r.B, r.KernelB), r.Subsystem, r.Seed, r.Sizes, r.Threshold, r.Checks, r.Patterns, r.Seconds, r.Performance, note)
	for _, f := range r.Findings {
		fmt.Fprintf(w, "found %s: %d hits, first at script %d: %s\n", f.Signature, f.Hits, f.Index, f.Script)
	}
}

// CommandLines are the command line of a compare --perf run of a and b on
// subsystem, drawing with engine from seed, and the one that judges one of
// its pattern files again (FILE).
func CommandLines(a, b, subsystem, engine string, seed uint64, o Options) (run, replay string) {
	metric := ""
	if o.Metric != "" {
		metric = " --metric " + o.Metric
	}
	sizes := make([]string, len(o.Sizes))
	for i, n := range o.Sizes {
		sizes[i] = fmt.Sprint(n)
	}
	run = fmt.Sprintf("ipcfuzz compare %s %s --perf --subsystem %s --engine %s --seed %d --sizes %s --threshold %g%s",
		a, b, subsystem, engine, seed, strings.Join(sizes, ","), o.Threshold, metric)
	replay = fmt.Sprintf("ipcfuzz compare %s %s --perf --subsystem %s --sizes %s --threshold %g%s --workload FILE",
		a, b, subsystem, strings.Join(sizes, ","), o.Threshold, metric)
	return run, replay
}
