package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
)

// What would silently compare something other than what the user asked
// for is refused in one line, exit 2, before anything runs: an option
// with no value (kernel:image=, which is what kernel:image=$UNSET expands
// to, would run this machine's kernel), and a count or a duration of
// nothing (--checks 0 would run the default 1000, --call-timeout 0 the
// default minute).
func TestNothingIsRefusedInOneLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"compare", "optimized", "kernel:image=", "--subsystem", "sem"}, `implementation "kernel:image=": option image= has no value`},
		{[]string{"compare", "naive:alloc=", "optimized"}, `implementation "naive:alloc=": option alloc= has no value`},
		{[]string{"compare", "naive", "optimized:caps=,remap_order=auto"}, "option caps= has no value"},
		{[]string{"replay", "../../corpus/ids/seed-cyclic-wrap.ops", "--impls", "naive,kernel:image="}, "option image= has no value"},
		{[]string{"worst", "naive:alloc=", "--subsystem", "ids"}, "option alloc= has no value"},
		{[]string{"complexity", "naive:alloc=", "--workload", "alloc-churn"}, "option alloc= has no value"},
		{[]string{"compare", "naive", "optimized", "--checks", "0"}, "-checks: must be at least 1"},
		{[]string{"compare", "naive", "optimized", "--checks", "-5"}, "-checks: must be at least 1"},
		{[]string{"compare", "naive", "optimized", "--time", "0"}, "-time: must be more than 0"},
		{[]string{"compare", "naive", "optimized", "--call-timeout", "0"}, "-call-timeout: must be more than 0"},
		{[]string{"compare", "naive", "optimized", "--call-timeout", "-1s"}, "-call-timeout: must be more than 0"},
		{[]string{"compare", "naive", "optimized", "--batch", "0"}, "--batch must be in 1..65536"},
		{[]string{"compare", "naive", "optimized", "--jobs", "0"}, "--jobs must be in 1..64"},
		{[]string{"compare", "naive", "optimized", "--perf", "--reps", "0"}, "-reps: must be at least 1"},
		{[]string{"replay", "../../corpus/ids/seed-cyclic-wrap.ops", "--call-timeout", "0s"}, "-call-timeout: must be more than 0"},
		{[]string{"worst", "naive", "--subsystem", "ids", "--budget", "0"}, "--budget must be in (0, 24h]"},
		{[]string{"worst", "naive", "--subsystem", "ids", "--reps", "0"}, "--reps must be in 1..1000"},
		{[]string{"worst", "naive", "--subsystem", "ids", "--call-timeout", "0"}, "-call-timeout: must be more than 0"},
		{[]string{"complexity", "naive", "--workload", "alloc-churn", "--reps", "0"}, "--reps must be in 1..1000"},
		{[]string{"complexity", "naive", "--workload", "alloc-churn", "--call-timeout", "0"}, "-call-timeout: must be more than 0"},
	}
	for _, c := range cases {
		r := refused(t, c.want, c.args...)
		require.Empty(t, r.stdout, "%v", c.args)
	}
}

// The summary line and the JSON object name the kernel release each side
// actually ran: a model side none, the kernel side this machine's.
func TestSummaryNamesTheKernelOfEachSide(t *testing.T) {
	t.Parallel()
	needKernel(t)
	release := strings.TrimPrefix(kernel.Release(), "Linux ")
	r := ipcfuzz(t, "compare", "optimized", "kernel", "--checks", "3", "--seed", "1", "--jobs", "1", "--json", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	s := summary(t, r)
	require.Equal(t, "", s["kernel_a"])
	require.Equal(t, release, s["kernel_b"])
	require.Equal(t, release, s["kernel"])
	r = ipcfuzz(t, "compare", "optimized", "kernel", "--checks", "3", "--seed", "1", "--jobs", "1", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "optimized vs kernel [Linux "+release+"] (ids,")
}

// --known reads a directory of known differences strictly (a bad line is
// refused naming its file and line, exit 2, before anything runs), and
// a run reports what they explained apart, in --json too.
func TestKnownFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "vma.known", "# c\nvma/seal/*ENOSYS* <6.10 8be7258aad44 mseal absent\nvma/seal/x 6.x - r\n")
	refusedAll(t, []string{"compare", "naive", "optimized", "--checks", "1"}, []refusal{
		{[]string{"--known", dir}, bad + ":3: releases \"6.x\""},
		{[]string{"--known", filepath.Join(dir, "nosuch")}, "--known: known differences: stat"},
	})
	good := t.TempDir()
	writeFile(t, good, "vma.known", "vma/seal/*ENOSYS* <6.10 8be7258aad44 mseal absent\n")
	for _, known := range []string{good, "none", "../../corpus/known"} {
		r := ipcfuzz(t, "compare", "naive", "optimized", "--subsystem", "vma", "--checks", "20", "--seed", "1", "--json", "--known", known, "--corpus", t.TempDir())
		require.Equal(t, 0, r.code, r.stderr)
		s := summary(t, r)
		require.Equal(t, []any{}, s["expected"], "models: no entry applies")
		require.Equal(t, []any{}, s["stale_known"])
		require.Equal(t, []any{}, s["causes"])
	}
}
