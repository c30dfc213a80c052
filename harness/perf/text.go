package perf

import (
	"fmt"
	"io"

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
