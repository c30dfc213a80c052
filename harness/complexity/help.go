package complexity

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// WorkloadsHelp lists every workload with its subsystem, default sizes and
// what it measures, and the form of a pattern file: the text of 'ipcfuzz
// help workloads'.
func WorkloadsHelp() string {
	var b strings.Builder
	b.WriteString("Workloads (ipcfuzz complexity IMPL... --workload W; sizes default to the workload's):\n")
	for _, w := range ops.Workloads {
		spec, _ := ops.WorkloadOf(w)
		fmt.Fprintf(&b, "  %-17s %-4s sizes %-22s %s\n", w, spec.Subsystem, spec.Sizes, spec.Doc)
	}
	fmt.Fprintf(&b, `
or a pattern file (--workload FILE.perf, sizes %s): a script with a body repeated n times and a
measured tail, as ipcfuzz worst writes them under corpus/perf/:
  subsystem shm
  repeat n {
  get shm key=0x0 mode=0600 size=1
  }
  measure
  list shm
`, DefaultPatternSizes)
	return b.String()
}
