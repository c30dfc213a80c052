// Command semmutant is a test-only implementation plugin: the optimized
// model with one deliberate semaphore bug, chosen when it is built
// (or, without one, by $IPCFUZZ_MUTATION at run time):
//
//	go build -ldflags "-X main.mutation=zerolast" ./cmd/ipcfuzz/testdata/semmutant
//
// zerolast: a change of values serves the sleepers that alter before those
// that wait for zero; noclamp: semadj applied at exit without clamping the
// value to 0..SEMVMX; forkundo: a forked child inherits its parent's undo
// lists (as if fork passed CLONE_SYSVSEM), so its exit undoes the parent's
// adjustments; nsundo: unshare and setns keep the task's undo lists
// instead of applying them (exit_sem), so they are applied at its exit, in
// whatever namespace it is in then; nsshm: setns runs exit_shm as unshare
// does (the segments the task created are orphaned when it joins another
// namespace: found by the shm generator).
package main

import (
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mutation is set with -ldflags "-X main.mutation=..." or, in a build
// without it, by $IPCFUZZ_MUTATION (the tests build the mutant once and
// choose the mutation per run).
var mutation string

func main() {
	if mutation == "" {
		mutation = os.Getenv("IPCFUZZ_MUTATION")
	}
	quirks := map[string]semq.Quirk{"zerolast": semq.QuirkAlterBeforeZero, "noclamp": semq.QuirkUndoUnclamped, "forkundo": 0, "nsundo": 0, "nsshm": 0}
	q, ok := quirks[mutation]
	if !ok {
		fmt.Fprintf(os.Stderr, "semmutant: built without a known mutation (%q)\n", mutation)
		os.Exit(2)
	}
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	ns.SetSemOptions(semq.Options{Structure: semq.PerSemaphore, Quirk: q})
	ns.SetUndoOnFork(mutation == "forkundo")
	ns.SetKeepUndoOnSwitch(mutation == "nsundo")
	ns.SetExitShmOnSetns(mutation == "nsshm")
	info := impls.Compose(impls.IPCPart(ns, ipcns.Options)).Describe(ops.Info{Name: "semmutant-" + mutation, Version: "test", ExactIDs: true})
	plugins.Serve(ops.NewLocal(info, ns))
}
