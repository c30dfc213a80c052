package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
)

// A finding with a namespace switch in it, found for real: semmutant nsshm
// (a setns orphans the segments its task created, as an unshare does)
// against the optimized model, by the shm generator. Its reproducer
// issues the setns in the task's process; expecting the mutant's results
// it exits 1 on this kernel at the diverging step, expecting optimized's
// it exits 0 (the kernel's setns runs no exit_shm).
func TestReproOfANamespaceFinding(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	needKernel(t)
	cc := cCompiler(t)
	mutant := testProgram(t, "./testdata/semmutant")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=nsshm"}, "compare", mutant, "optimized", "--subsystem", "shm", "--checks", "10000", "--seed", "1", "--json", "--corpus", t.TempDir())
	require.Equal(t, 1, r.code, r.stderr)
	path := summary(t, r)["scripts"].([]any)[0].(string)
	f, err := report.Read(path)
	require.NoError(t, err)
	require.Positive(t, f.First, "the finding names its first diverging step")
	switches := 0
	for _, st := range f.Steps[:f.First] {
		if strings.HasPrefix(st.Op, "setns ") || strings.HasPrefix(st.Op, "unshare ") {
			switches++
		}
	}
	require.Positive(t, switches, "no unshare or setns before the divergence of %s", path)
	step := f.Steps[f.First-1]

	code, out := reproRun(t, cc, path, "a")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, fmt.Sprintf("step %d: %s: kernel -> %s, expected %s\n", step.N, step.Op, step.B, step.A))
	code, out = reproRun(t, cc, path, "b")
	require.Equal(t, 0, code, out)
}

// A finding whose sides agree at every step and differ in the final state
// only (testdata/nsundo-final-only.ops: semmutant nsundo, a namespace
// switch that keeps the undo list, found against optimized at seed 1):
// repro says, on stderr and in the program's header, that its reproducer
// cannot tell the sides apart, and the program indeed exits 0 expecting
// either side.
func TestReproOfAFinalStateFinding(t *testing.T) {
	t.Parallel()
	const path = "testdata/nsundo-final-only.ops"
	const warning = "sides A and B give the same result at every step (they differ in the final state, which the reproducer does not check)"
	r := ipcfuzz(t, "repro", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "ipcfuzz: repro: "+path+": "+warning+": it exits 0 whichever side the kernel follows\n", r.stderr)
	require.Contains(t, r.stdout, " * "+warning)
	require.Contains(t, r.stdout, "setns ns=t0 task=t1")

	// A finding whose results differ at a step gets no such line.
	r = ipcfuzz(t, "repro", "../../docs/msg-race.ops")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.NotContains(t, r.stdout, warning)

	needKernel(t)
	cc := cCompiler(t)
	for _, side := range []string{"a", "b"} {
		code, out := reproRun(t, cc, path, side)
		require.Equal(t, 0, code, "expecting side %s:\n%s", side, out)
	}
}
