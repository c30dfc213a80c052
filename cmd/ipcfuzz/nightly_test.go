package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
)

// needNightlyTools skips where ci/nightly.sh cannot run, naming what is missing.
func needNightlyTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "jq", "timeout", "ipcs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("ci/nightly.sh needs %s, which is not on PATH", tool)
		}
	}
}

// twoBugs builds the planted-divergence plugin once.
func twoBugs(t *testing.T) string {
	t.Helper()
	return testProgram(t, "./testdata/twobugs")
}

// nightly runs ci/nightly.sh with this test's ipcfuzz and extra
// environment; a run gets 10 minutes.
func nightly(t *testing.T, env []string, args ...string) outcome {
	t.Helper()
	r := testkit.Run(t, 10*time.Minute, append([]string{"IPCFUZZ=" + bin}, env...), "bash", append([]string{"../../ci/nightly.sh"}, args...)...)
	return outcome{r.Code, r.Stdout, r.Stderr}
}

// runShard runs shard id of ci/nightly.sh (of its table, or of the one
// IPCFUZZ_SHARDS in env names) for budget into a fresh directory, requires
// the exit that goes with status and that status in the shard's summary,
// and returns the shard's directory and its summary.
func runShard(t *testing.T, env []string, id, budget, status string) (string, map[string]any) {
	t.Helper()
	code := slices.Index([]string{"clean", "found", "infrastructure"}, status) // exits 0, 1, 2
	require.GreaterOrEqual(t, code, 0, "no shard status %q", status)
	out := t.TempDir()
	r := nightly(t, env, id, budget, out)
	require.Equal(t, code, r.code, r.stderr)
	dir := filepath.Join(out, "shard-"+id)
	s := shardSummary(t, dir)
	require.Equal(t, status, s["status"])
	return dir, s
}

// shardSummary reads a shard's summary.json.
func shardSummary(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// shardJUnit reads a shard's junit.xml.
func shardJUnit(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	require.NoError(t, err)
	return string(data)
}

// perfShardFinds runs the registry's shard name with env within budget,
// which must be clean and count something under counter in its summary;
// then a perf shard on shm of its own running command (seed 1, within
// found), which must find. It returns that shard's directory and summary.
func perfShardFinds(t *testing.T, env []string, name, budget, counter, command, found string) (string, map[string]any) {
	t.Helper()
	needNightlyTools(t)
	_, s := runShard(t, env, shardNamed(t, name), budget, "clean")
	require.NotZero(t, s[counter])
	tab := table(t, "perf", "shm", command)
	return runShard(t, []string{"IPCFUZZ_SHARDS=" + tab, "IPCFUZZ_SEED=1"}, "0", found, "found")
}

// shardNamed returns the id of the registry's shard called name.
func shardNamed(t *testing.T, name string) string {
	for _, s := range shardTable() {
		if s.Name == name {
			return fmt.Sprint(s.ID)
		}
	}
	t.Fatalf("no shard %s", name)
	return ""
}

// table writes a one-row shard table for IPCFUZZ_SHARDS.
func table(t *testing.T, kind, sub, command string) string {
	path := filepath.Join(t.TempDir(), "shards.tsv")
	text := shards.Header + "\n" + strings.Join([]string{"0", "planted", kind, sub, "30m", command}, "\t") + "\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// Exit 0: a shard of the registry's table that finds nothing.
func TestNightlyCleanShardExits0(t *testing.T) {
	t.Parallel()
	long(t) // end to end, seconds each: the long pass runs it (issue 31: the suite that fits)
	needNightlyTools(t)
	dir, s := runShard(t, []string{"IPCFUZZ_SEED=7"}, shardNamed(t, "ids-naive-optimized"), "2s", "clean")
	require.EqualValues(t, 7, s["seed"])
	require.Equal(t, "ids-naive-optimized", s["name"])
	require.NotZero(t, s["checks"])
	uname, err := exec.Command("uname", "-r").Output()
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(uname)), s["kernel"])
	require.Contains(t, s["go"], "go1.")
	junit := shardJUnit(t, dir)
	require.Contains(t, junit, `failures="0"`)
}

// Exit 1: a compare shard against the planted plugin keeps going and
// records each of its two signatures once, with hits.
func TestNightlyFindingExits1(t *testing.T) {
	long(t) // a shard that finds and shrinks: seconds of plugin runs
	t.Parallel()
	needNightlyTools(t)
	tab := table(t, "compare", "ids", "ipcfuzz compare "+twoBugs(t)+" optimized --subsystem ids --engine rapid --equiv exact")
	dir, s := runShard(t, []string{"IPCFUZZ_SHARDS=" + tab, "IPCFUZZ_SEED=1"}, "0", "3s", "found")
	sigs := map[string]bool{}
	for _, f := range s["findings"].([]any) {
		f := f.(map[string]any)
		require.False(t, sigs[f["signature"].(string)], "signature %s twice", f["signature"])
		sigs[f["signature"].(string)] = true
		require.Greater(t, f["hits"].(float64), 1.0)
		require.FileExists(t, f["script"].(string))
	}
	require.Equal(t, map[string]bool{"ids/rmid/EIDRM-EINVAL": true, "ids/get/ENOENT-EEXIST": true}, sigs)
	junit := shardJUnit(t, dir)
	require.Contains(t, junit, "finding ids:rmid:EIDRM-EINVAL")
}

// fuzzShards is held by the tests that run a fuzz shard of props/ids: a
// shard writes its failing inputs into props/ids/testdata/fuzz of the
// checkout, then moves the new ones out, and would take the other's for
// its own. (TestReadme, whose go test -fuzz ./props/ids would read them
// and whose git status would see them, is not a parallel test: it never
// runs beside them.)
var fuzzShards sync.Mutex

// Exit 1 from a fuzz shard: the planted plugin fails a seed input, which
// is kept and turned into a signed corpus finding.
func TestNightlyFuzzFindingExits1(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	needNightlyTools(t)
	fuzzShards.Lock()
	defer fuzzShards.Unlock()
	tab := table(t, "fuzz", "ids", "go test -run ^$ -fuzz ^Fuzz ./props/ids")
	dir, s := runShard(t, []string{"IPCFUZZ_SHARDS=" + tab, "IPCFUZZ_IMPLS=" + twoBugs(t) + ",optimized"}, "0", "5s", "found")
	inputs := s["failing_inputs"].([]any)
	require.NotEmpty(t, inputs)
	require.FileExists(t, inputs[0].(string))
	require.NotEmpty(t, s["findings"], "the failing input did not become a finding")
	files, err := filepath.Glob(filepath.Join(dir, "corpus", "ids", "*.ops"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	require.FileExists(t, filepath.Join(dir, "junit.xml"))
}

// A fuzz failure that does not reproduce is not a finding: the failsonce
// plugin answers one get wrongly (while its marker file exists), so the
// fuzzer fails, and the replay of that input on a fresh plugin agrees. The
// shard is clean, says why, and keeps the input.
func TestNightlyUnreproducedFuzzFailureExits0(t *testing.T) {
	long(t)
	t.Parallel()
	needNightlyTools(t)
	fuzzShards.Lock()
	defer fuzzShards.Unlock()
	plugin := testProgram(t, "./testdata/failsonce")
	marker := filepath.Join(t.TempDir(), "marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))
	tab := table(t, "fuzz", "ids", "go test -run ^$ -fuzz ^Fuzz ./props/ids")
	_, s := runShard(t, []string{"IPCFUZZ_SHARDS=" + tab, "IPCFUZZ_IMPLS=" + plugin + ",optimized", "IPCFUZZ_FAILSONCE=" + marker}, "0", "5s", "clean")
	require.NoFileExists(t, marker, "the plugin never failed: the test proves nothing")
	require.Contains(t, s["reason"], "did not reproduce")
	require.NotEmpty(t, s["failing_inputs"], "the input the fuzzer failed on is kept")
	require.Empty(t, s["findings"])
}

// Exit 2: what is wrong with the arguments, the table or the setup.
func TestNightlyInfrastructureExits2(t *testing.T) {
	t.Parallel()
	needNightlyTools(t)
	missing := table(t, "compare", "ids", "ipcfuzz compare ./no-such-plugin optimized --subsystem ids")
	cases := []struct {
		name    string
		env     []string
		args    []string
		summary bool // the shard directory exists, so a summary says why
		want    string
	}{
		{"usage", nil, []string{"0"}, false, "usage"},
		{"unknown shard", nil, []string{"999", "2s", "OUT"}, false, "no shard 999"},
		{"bad budget", nil, []string{"0", "soon", "OUT"}, true, "not a duration"},
		{"setup failure", []string{"IPCFUZZ_SHARDS=" + missing}, []string{"0", "2s", "OUT"}, true, "no-such-plugin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			for i, a := range c.args {
				if a == "OUT" {
					c.args[i] = out
				}
			}
			r := nightly(t, c.env, c.args...)
			require.Equal(t, 2, r.code, r.stderr)
			require.Contains(t, r.stderr, c.want)
			if c.summary {
				s := shardSummary(t, filepath.Join(out, "shard-0"))
				require.Equal(t, "infrastructure", s["status"])
				require.Contains(t, s["reason"], c.want)
			}
		})
	}
}
