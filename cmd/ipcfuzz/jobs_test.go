package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
)

// withoutTimes is a --json summary without the fields that depend on the
// clock (and the corpus paths, which name the run's own directory).
func withoutTimes(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "seconds", "ops_per_sec", "timing", "sides":
		default:
			out[k] = v
		}
	}
	return out
}

// The verdict does not depend on --jobs: script i is the same script
// whatever the number of pairs, so the --json summary (minus its time
// fields) is the same for 1, 2 and 4 jobs, on a pair of models and, where
// it can run, on the live kernel.
func TestJobsDoNotChangeTheSummary(t *testing.T) {
	t.Parallel()
	pairs := [][]string{{"naive", "optimized", "msg"}}
	if m, err := kernel.New(); err == nil {
		m.Close()
		pairs = append(pairs, []string{"optimized", "kernel", "shm"}, []string{"optimized", "kernel", "msg"})
	} else {
		t.Logf("compared on the models only: %v", err)
	}
	for _, p := range pairs {
		t.Run(p[0]+"-"+p[1]+"-"+p[2], func(t *testing.T) {
			if p[1] == "kernel" {
				long(t) // 900 scripts on the kernel
			}
			t.Parallel()
			var first map[string]any
			for _, jobs := range []int{1, 2, 4} {
				r := ipcfuzz(t, "compare", p[0], p[1], "--subsystem", p[2], "--checks", "300", "--seed", "11", "--stats", "--json", "--jobs", strconv.Itoa(jobs), "--corpus", t.TempDir())
				require.Equal(t, 0, r.code, r.stderr)
				s := withoutTimes(summary(t, r))
				require.EqualValues(t, 300, s["checks"])
				if first == nil {
					first = s
					continue
				}
				require.Equal(t, first, s, "--jobs %d changed the summary", jobs)
			}
		})
	}
}

// With a planted divergence (the noseqbump plugin), --jobs 4 reports the
// same first script and the same shrunk script as --jobs 1.
func TestJobsReportTheSameDivergence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mutant := testProgram(t, "../../plugins/example/noseqbump")
	var found []map[string]any
	var texts []string
	for _, jobs := range []string{"1", "4"} {
		corpusDir := filepath.Join(dir, "jobs"+jobs)
		r := ipcfuzz(t, "compare", mutant, "optimized", "--checks", "2000", "--seed", "3", "--json", "--jobs", jobs, "--corpus", corpusDir)
		require.Equal(t, 1, r.code, r.stderr)
		s := summary(t, r)
		require.EqualValues(t, 1, s["divergences"])
		findings := s["findings"].([]any)
		require.Len(t, findings, 1)
		f := findings[0].(map[string]any)
		delete(f, "script")
		delete(f, "seconds") // when it was found, not what
		found = append(found, f)
		scripts := s["scripts"].([]any)
		require.Len(t, scripts, 1)
		text, err := os.ReadFile(scripts[0].(string))
		require.NoError(t, err)
		// The date says when each run found it, the rest must agree.
		texts = append(texts, regexp.MustCompile(`(?m)^# date: .*\n`).ReplaceAllString(string(text), ""))
	}
	require.Equal(t, found[0], found[1], "the finding differs between --jobs 1 and --jobs 4")
	require.Equal(t, texts[0], texts[1], "the shrunk script differs between --jobs 1 and --jobs 4")
}
