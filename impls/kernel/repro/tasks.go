//go:build linux && amd64

package repro

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// The tasks subsystem: the runtime does the work (fork_task, exit_task,
// interrupt_task and setns_task in main, unshare_ns and enter_ns in the
// task process); a step writes what is left.

func init() {
	steps.Add(fixed("\t(void)out;\n"), ops.KindExit, ops.KindInterrupt)
	steps.Add(fixed("\tfork_child_step(out);\n"), ops.KindForkTask)
	steps.Add(fixed("\tunshare_ns(out);\n"), ops.KindUnshare)
	steps.Add(fixed("\tenter_ns(out);\n"), ops.KindSetns)
}
