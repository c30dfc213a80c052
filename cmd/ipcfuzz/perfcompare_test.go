package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/perf"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
)

// comparePerf runs compare --perf with --json into a findings directory and
// returns its summary.
func comparePerf(t *testing.T, dir string, args ...string) (perf.Result, outcome) {
	t.Helper()
	r := ipcfuzz(t, append([]string{"compare", "--perf", "--json", "--corpus", dir}, args...)...)
	var s perf.Result
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &s), "%s\n%s", r.stdout, r.stderr)
	return s, r
}

// The plugin that lost the listing's max_idx bailout gives the optimized
// model's results (compare cannot see it); compare --perf flags it as a
// performance finding: minimal, written like a divergence (a format-2
// header, the table), measured again by complexity, judged again by
// --workload.
func TestComparePerfCatchesTheLostBailout(t *testing.T) {
	t.Parallel()
	mutant := testProgram(t, "./testdata/nomaxidx")
	dir := t.TempDir()
	s, r := comparePerf(t, dir, "optimized", mutant, "--subsystem", "shm", "--seed", "1", "--checks", "20")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, 1, s.Performance, r.stderr)
	require.Len(t, s.Findings, 1)
	f := s.Findings[0]
	require.Equal(t, "performance", f.Kind)
	// The measured operation walks the listing: a list, an exit
	// (exit_shm), shm_rmid_forced=1 (the orphans) or SHM_INFO.
	require.Regexp(t, `^shm/perf:get:(list|exit|rmid_forced|shmctl)$`, f.Signature)
	require.LessOrEqual(t, f.Ops, 3, "not minimal: %s", r.stderr)
	text, err := os.ReadFile(f.Script)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(f.Script), corpus.Slug(strings.TrimPrefix(f.Signature, "shm/"))+"~optimized~nomaxidx-"), f.Script)
	h := corpus.ParseHeader(string(text))
	require.Equal(t, "performance", h.Kind)
	require.Equal(t, 2, h.Format)
	require.Equal(t, f.Signature, h.Signature)
	require.True(t, h.HasSeed)
	require.Equal(t, uint64(1), h.Seed)
	require.Contains(t, h.Command, "ipcfuzz compare optimized "+mutant+" --perf --subsystem shm")
	require.Contains(t, string(text), "#    N  optimized nodes")
	p, err := ops.ParsePattern(f.Script, strings.NewReader(string(text)))
	require.NoError(t, err)
	require.Equal(t, "get", p.Body[0].Kind.String())

	// The file is a workload of complexity, and compare --perf judges it
	// again: still slower against the mutant, not against optimized itself.
	c := ipcfuzz(t, "complexity", "optimized", mutant, "--workload", f.Script, "--metric", "counter", "--sizes", "8,16,32", "--reps", "1")
	require.Equal(t, 0, c.code, c.stderr)
	again := ipcfuzz(t, "compare", "optimized", mutant, "--perf", "--subsystem", "shm", "--workload", f.Script)
	require.Equal(t, 1, again.code, again.stderr)
	require.Contains(t, again.stdout, "B faster by at least n^")
	same := ipcfuzz(t, "compare", "optimized", "optimized", "--perf", "--subsystem", "shm", "--workload", f.Script)
	require.Equal(t, 0, same.code, same.stderr)
}

// The models as they are: the optimized one grows no faster than the naive
// one on any cut of these scripts.
func TestComparePerfModelsClean(t *testing.T) {
	t.Parallel()
	s, r := comparePerf(t, t.TempDir(), "naive", "optimized", "--subsystem", "shm", "--seed", "1", "--checks", "5")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 5, s.Checks)
	require.NotZero(t, s.Patterns)
	require.Empty(t, s.Findings)
}

func TestComparePerfBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []refusal{
		{[]string{"compare", "naive", "optimized", "--threshold", "1"}, "--threshold only with --perf"},
		{[]string{"compare", "naive", "optimized", "--perf", "--sizes", "8,16"}, "at least 3"},
		{[]string{"compare", "naive", "optimized", "--perf", "--report", "r.html"}, "not of --perf"},
		{[]string{"compare", "naive", "optimized", "--perf", "--threshold", "-1"}, "threshold"},
		{[]string{"compare", "naive", "kernel", "--perf"}, "kernel counts nothing"},
		{[]string{"compare", "naive", "optimized", "--perf", "--workload", "/nonexistent.perf"}, "/nonexistent.perf"},
	} {
		if slices.Contains(c.args, "kernel") {
			m, err := kernel.New()
			if err != nil { // no kernel side here (not root): its own refusal is tested elsewhere
				t.Logf("%v not run: the kernel side needs a private IPC namespace: %v", c.args, err)
				continue
			}
			m.Close()
		}
		r := ipcfuzz(t, c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
		require.NotContains(t, r.stderr, "panic", "%v", c.args)
	}
}

// The nightly perf-compare shard runs compare --perf through the compare
// path of ci/nightly.sh: clean on the models, a finding (exit 1, the file
// kept, junit failed) against the mutant.
func TestNightlyPerfCompareShard(t *testing.T) {
	long(t)
	t.Parallel()
	dir, s := perfShardFinds(t, []string{"IPCFUZZ_SEED=1"}, "shm-perf-compare", "5s", "checks",
		"ipcfuzz compare optimized "+testProgram(t, "./testdata/nomaxidx")+" --subsystem shm --perf --threshold 0.5", "20s")
	scripts := s["scripts"].([]any)
	require.NotEmpty(t, scripts) // --keep-going: one file per signature
	for _, f := range scripts {
		require.FileExists(t, f.(string))
	}
	junit := shardJUnit(t, dir)
	require.Contains(t, junit, `failures="`)
	require.NotContains(t, junit, `failures="0"`)
}
