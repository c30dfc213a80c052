package main

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// vmaKernel reports whether the live kernel runs the vma subsystem here
// (its helper needs a C compiler).
func vmaKernel(t *testing.T) bool {
	t.Helper()
	return sides.Usable("kernel", "vma") == nil
}

// Each deliberate VMA merging bug (vmamutant: a merge that ignores anon_vma
// compatibility; an mremap that keeps the old pgoff of an unfaulted
// anonymous VMA) is found against the optimized model within a few
// thousand checks and shrunk to a few operations; on the script found,
// naive, optimized and the kernel agree, and the mutant does not.
func TestVMAMutantsAreFoundAndShrunk(t *testing.T) {
	t.Parallel()
	kernel := vmaKernel(t)
	bin := testProgram(t, "./testdata/vmamutant")
	for _, m := range []string{"anon", "pgoff"} {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := []string{"IPCFUZZ_MUTATION=" + m}
			// Seed 2 (seed 1 until moves drew MREMAP_DONTUNMAP: its pgoff
			// finding then mapped an execute-only page, whose pkey=1 the
			// mutant states with the models' default quirks and a kernel
			// without protection keys does not show).
			r := ipcfuzzEnv(t, env, "compare", bin, "optimized", "--subsystem", "vma", "--checks", "3000", "--seed", "2", "--json", "--corpus", dir)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 1, s["divergences"])
			t.Logf("found after %v checks", s["checks"])
			path := s["scripts"].([]any)[0].(string)
			sc, err := corpus.Read(path)
			require.NoError(t, err)
			require.LessOrEqual(t, len(sc.Steps), 8)
			require.Equal(t, 1, ipcfuzzEnv(t, env, "replay", path, "--impls", bin+",optimized").code)
			r = ipcfuzz(t, "replay", path, "--impls", "naive,optimized")
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			if kernel {
				r = ipcfuzz(t, "replay", path, "--impls", "optimized,kernel")
				require.Equal(t, 0, r.code, r.stdout+r.stderr)
			}
		})
	}
}

// A mutant built without a known mutation refuses to serve.
func TestVMAMutantNeedsAMutation(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testProgram(t, "./testdata/vmamutant"))
	cmd.Env = []string{} // no IPCFUZZ_MUTATION either
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "without a known mutation")
}

// One anonymous-pgoff bug is one cause: the mutant's fixed mremap keeps
// the old vm_pgoff, which no layout shows, so its findings first differ
// at later calls (a remap that finds no VMA to move, a mapping that does
// not merge); merge probes after each prefix (a page mapped beside what
// the prefix made, then a layout) show the states differ right after the
// remap, and every signature is keyed by it.
func TestAnonPgoffBugIsOneCause(t *testing.T) {
	t.Parallel()
	bin := testProgram(t, "./testdata/vmamutant")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=pgoff"}, "compare", bin, "optimized", "--subsystem", "vma", "--checks", "600", "--seed", "1",
		"--keep-going", "--json", "--corpus", t.TempDir())
	require.Equal(t, 1, r.code, r.stderr)
	s := summary(t, r)
	causes := s["causes"].([]any)
	require.Len(t, causes, 1, "%v", causes)
	c := causes[0].(map[string]any)
	require.Equal(t, "vma: remap fixed", c["key"])
	require.GreaterOrEqual(t, len(c["signatures"].([]any)), 2, "the test wants a bug that shows under several signatures")
}
