package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
)

// hostIPC is what the host's IPC namespace looks like: its limits and how
// many objects it holds.
func hostIPC(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"msgmni", "shmmni", "sem", "msg_next_id", "sem_next_id", "shm_next_id"} {
		v, err := os.ReadFile("/proc/sys/kernel/" + f)
		require.NoError(t, err)
		b.WriteString(f + "=" + strings.TrimSpace(string(v)) + "\n")
	}
	for _, f := range []string{"msg", "sem", "shm"} {
		v, err := os.ReadFile("/proc/sysvipc/" + f)
		require.NoError(t, err)
		b.WriteString(f + " rows=" + string(rune('0'+strings.Count(string(v), "\n"))) + "\n")
	}
	return b.String()
}

// The counters are deterministic, so their growth can be asserted: the naive
// walk is quadratic, the optimized one is not. Wall times are only reported.
func TestComplexityCountersAndHostUntouched(t *testing.T) {
	t.Parallel()
	needKernel(t)
	before := hostIPC(t)
	dir := t.TempDir()
	plot := filepath.Join(dir, "out.svg")
	r := ipcfuzz(t, "complexity", "naive", "optimized", "kernel", "--workload", "proc-read-shm",
		"--sizes", "256..4k", "--reps", "2", "--format", "json", "--plot", plot)
	require.Equal(t, 0, r.code, r.stderr)
	var rep complexity.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, []int{256, 512, 1024, 2048, 4096}, rep.Sizes)
	require.Len(t, rep.Impls, 3)
	naive, opt, kern := rep.Impls[0], rep.Impls[1], rep.Impls[2]
	require.InDelta(t, 2.0, naive.Fit.Counter.Exponent, 0.2, "naive probes")
	require.Equal(t, complexity.ClassQuad, naive.Fit.Counter.Class)
	require.InDelta(t, 1.0, opt.Fit.Counter.Exponent, 0.2, "optimized nodes")
	require.Nil(t, kern.Fit.Counter, "the kernel counts nothing")
	require.NotNil(t, kern.Fit.Wall)
	require.Len(t, kern.WallReps[0], 2)
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	for _, name := range []string{"naive", "optimized", "kernel", "slope"} {
		require.Contains(t, string(svg), name)
	}
	require.Equal(t, before, hostIPC(t), "the host's IPC limits or objects changed")
}

func TestComplexityTableAndBenchstat(t *testing.T) {
	t.Parallel()
	r := ipcfuzz(t, "complexity", "naive", "optimized", "--workload", "lookup-depth", "--sizes", "64,1024,8192", "--reps", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "naive ms")
	require.Contains(t, r.stdout, "optimized nodes")
	require.Contains(t, r.stdout, "verdict")

	r = ipcfuzz(t, "complexity", "naive", "optimized", "--workload", "alloc-churn", "--sizes", "64..256", "--reps", "3", "--format", "benchstat")
	require.Equal(t, 0, r.code, r.stderr)
	file := filepath.Join(t.TempDir(), "bench.txt")
	require.NoError(t, os.WriteFile(file, []byte(r.stdout), 0o644))
	out, err := exec.Command("go", "tool", "benchstat", file).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "AllocChurn")
	require.Contains(t, string(out), "impl=naive")
	require.NotContains(t, strings.ToLower(string(out)), "error")
}

func TestComplexityBadInput(t *testing.T) {
	t.Parallel()
	refusedAll(t, []string{"complexity"}, []refusal{
		{[]string{"naive", "--workload", "nosuch"}, "unknown workload"},
		{[]string{"naive", "--workload", "alloc-churn", "--sizes", "64..40000"}, "out of range"},
		{[]string{"naive", "--workload", "alloc-churn", "--sizes", "1024"}, "at least 3 distinct sizes"},
		{[]string{"naive", "--workload", "alloc-churn", "--sizes", "1024,1024,2048"}, "1024 is given twice"},
		{[]string{"--workload", "alloc-churn"}, "at least one implementation"},
		{[]string{"naive", "--workload", "alloc-churn", "--sizes", "64,128,256", "--plot", "x.gif"}, "x.gif"},
	})
}

// A plugin whose /proc walk drops the object at max_idx is caught by compare.
func TestCompareCatchesListingThatSkipsMaxIdx(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	_, text := findsOne(t, testProgram(t, "./testdata/skipmax"), "--checks", "200", "--seed", "1")
	// Either a list operation or the final state (whose objects come from the
	// same walk) shows the missing object.
	require.Regexp(t, `list|final state differs: (msg|sem|shm) ids`, text)
}
