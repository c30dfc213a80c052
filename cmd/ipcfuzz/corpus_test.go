package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// keepGoing runs compare --keep-going against the planted plugin into
// dir/corpus and stores its summary as dir/summary.json, as a shard does.
func keepGoing(t *testing.T, dir, seed string) map[string]any {
	t.Helper()
	r := ipcfuzz(t, "compare", twoBugs(t), "optimized", "--keep-going", "--checks", "2000", "--seed", seed, "--json", "--corpus", filepath.Join(dir, "corpus"))
	require.Equal(t, 1, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, corpus.SummaryName), []byte(lines[len(lines)-1]), 0o644))
	return summary(t, r)
}

// findingsBySignature checks each signature appears once and returns its hits.
func findingsBySignature(t *testing.T, s map[string]any) map[string]int {
	t.Helper()
	out := map[string]int{}
	total := 0
	for _, f := range s["findings"].([]any) {
		f := f.(map[string]any)
		sig := f["signature"].(string)
		require.NotContains(t, out, sig, "signature %s reported twice", sig)
		out[sig] = int(f["hits"].(float64))
		total += out[sig]
		sc, err := corpus.Read(f["script"].(string))
		require.NoError(t, err)
		require.LessOrEqual(t, len(sc.Steps), 3, "the script of %s is not minimal", sig)
	}
	require.EqualValues(t, s["divergences"], total, "every divergence is a hit of one signature")
	return out
}

// The planted plugin's two bugs are two signatures, each reported once
// with its hits and a minimal script; two runs merged keep one script per
// signature and add up the hits.
func TestKeepGoingTwoBugsThenMerge(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	root := t.TempDir()
	runs := []string{filepath.Join(root, "run1"), filepath.Join(root, "run2")}
	hits := map[string]int{}
	for i, seed := range []string{"1", "4"} {
		require.NoError(t, os.MkdirAll(runs[i], 0o755))
		got := findingsBySignature(t, keepGoing(t, runs[i], seed))
		require.Len(t, got, 2)
		for sig, n := range got {
			hits[sig] += n
		}
	}
	require.Contains(t, hits, "ids/rmid/EIDRM-EINVAL")
	require.Contains(t, hits, "ids/get/ENOENT-EEXIST")

	into := filepath.Join(root, "merged")
	r := ipcfuzz(t, "corpus", "merge", runs[0], runs[1], "--into", into, "--json", "--summary", filepath.Join(root, "summary.md"))
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var rep corpus.MergeReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.New, 2)
	require.Len(t, rep.Added, 2)
	files, err := corpus.Files(into)
	require.NoError(t, err)
	require.Len(t, files, 2, "one script per signature")
	m, err := corpus.ReadManifest(into)
	require.NoError(t, err)
	for sig, n := range hits {
		rec := m.Find(sig)
		require.NotNil(t, rec, sig)
		require.Equal(t, n, rec.Hits, sig)
		require.FileExists(t, filepath.Join(into, rec.Script))
	}
	md, err := os.ReadFile(filepath.Join(root, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## New signatures (2)")
}

// corpus merge on real replays: the counts of its report, and committed
// files that stay as they were.
func TestCorpusMergeCounts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	plugin := twoBugs(t)
	into, in := filepath.Join(root, "corpus"), filepath.Join(root, "shard-0")
	header := "# ipcfuzz divergence\n# found by: ipcfuzz compare " + plugin + " optimized --subsystem ids --engine rapid --seed 1 --equiv exact\n"
	committed := header + "# signature ids/rmid/EIDRM-EINVAL\nsubsystem ids\nrmid shm id=-1\n"
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(filepath.Join(into, "ids", "committed.ops"), committed)
	write(filepath.Join(into, "ids", "seed-a.ops"), "subsystem ids\nstat msg id=-1\n")
	write(filepath.Join(in, "ids", "known.ops"), committed) // the committed script
	write(filepath.Join(in, "ids", "new.ops"), header+"# signature ids/get/ENOENT-EEXIST\nsubsystem ids\nget msg key=0x5 creat mode=0600\nget msg key=0x5 creat excl mode=0600\n")
	write(filepath.Join(in, "ids", "same.ops"), header+"# signature ids/get/ENOENT-EEXIST\nsubsystem ids\nget msg key=0x5 creat mode=0600\nget msg key=0x5 creat excl mode=0600\n")
	write(filepath.Join(in, "ids", "bigger.ops"), header+"# signature ids/get/ENOENT-EEXIST\nsubsystem ids\nget msg key=0x6 creat mode=0600\nstat msg id=-1\nget msg key=0x6 creat excl mode=0600\n")
	write(filepath.Join(in, "ids", "fixed.ops"), header+"# signature ids/stat/EINVAL-ok\nsubsystem ids\nstat shm id=-1\n") // does not diverge
	write(filepath.Join(in, "ids", "stale.ops"), strings.ReplaceAll(header, plugin, "./gone")+"subsystem ids\nrmid msg id=-1\n")
	write(filepath.Join(in, "ids", "garbage.ops"), "subsystem ids\nget msg key=\n")
	before := map[string]string{}
	for _, f := range []string{"committed.ops", "seed-a.ops"} {
		data, err := os.ReadFile(filepath.Join(into, "ids", f))
		require.NoError(t, err)
		before[f] = string(data)
	}

	r := ipcfuzz(t, "corpus", "merge", in, "--into", into, "--json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var rep corpus.MergeReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, 7, rep.Files)
	require.Equal(t, 1, rep.Known)
	require.Equal(t, 1, rep.Duplicates, r.stdout)
	require.Equal(t, 1, rep.Larger)
	require.Equal(t, 1, rep.NotReproduced)
	require.Equal(t, 1, rep.Stale)
	require.Equal(t, 1, rep.Unparsable)
	require.Len(t, rep.Added, 1)
	require.Len(t, rep.New, 1)
	require.Equal(t, "ids/get/ENOENT-EEXIST", rep.New[0].Signature)
	require.Equal(t, 3, rep.New[0].Tonight) // new, same and bigger

	for f, text := range before {
		data, err := os.ReadFile(filepath.Join(into, "ids", f))
		require.NoError(t, err, "committed file %s was removed", f)
		require.Equal(t, text, string(data), "committed file %s was changed", f)
	}
	r = ipcfuzz(t, "corpus", "merge", filepath.Join(root, "nowhere"), "--into", into)
	require.Equal(t, 2, r.code)
}

// minimize is a dry run unless told where to write, replays smallest
// first, and never touches its input.
func TestCorpusMinimize(t *testing.T) {
	t.Parallel()
	r := ipcfuzz(t, "corpus", "minimize", "../../corpus", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep corpus.MinimizeReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Empty(t, rep.Out)
	require.Equal(t, rep.Scripts, len(rep.Kept)+len(rep.Dropped)+len(rep.Skipped))
	require.NotEmpty(t, rep.Kept)
	require.NotZero(t, rep.Pairs)

	out := filepath.Join(t.TempDir(), "min")
	r = ipcfuzz(t, "corpus", "minimize", "../../corpus", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	written, err := corpus.Files(out)
	require.NoError(t, err)
	require.Len(t, written, len(rep.Kept))
	// A corpus of one script twice over keeps one.
	dup := t.TempDir()
	text, err := os.ReadFile(rep.Kept[0])
	require.NoError(t, err)
	for _, n := range []string{"a.ops", "b.ops"} {
		require.NoError(t, os.WriteFile(filepath.Join(dup, n), text, 0o644))
	}
	r = ipcfuzz(t, "corpus", "minimize", dup, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, []string{filepath.Join(dup, "a.ops")}, rep.Kept)
	require.Equal(t, []string{filepath.Join(dup, "b.ops")}, rep.Dropped)

	r = ipcfuzz(t, "corpus", "minimize", "../../corpus", "--out", out)
	require.Equal(t, 2, r.code, "an --out that is not empty is refused")
}

// Built with -cover, minimize counts the models' coverage units too.
func TestCorpusMinimizeCoverage(t *testing.T) {
	long(t)
	t.Parallel()
	cover := filepath.Join(t.TempDir(), "ipcfuzz-cover")
	out, err := exec.Command("go", "build", "-cover", "-covermode=atomic", "-coverpkg=../../impls/...,.", "-o", cover, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	o, err := exec.Command(cover, "corpus", "minimize", "../../corpus", "--json").Output()
	require.NoError(t, err)
	var rep corpus.MinimizeReport
	require.NoError(t, json.Unmarshal(o, &rep))
	require.Equal(t, "measured", rep.Coverage)
	require.NotZero(t, rep.Units)
}

// A finding's script shows the bug of its signature, not another one the
// script also reached while it was shrunk (seeds 2 and 3 used to file a
// get signature under a one-op rmid script).
func TestShrunkScriptKeepsItsSignature(t *testing.T) {
	long(t)
	t.Parallel()
	for _, seed := range []string{"2", "3"} {
		dir := t.TempDir()
		s := keepGoing(t, dir, seed)
		for _, f := range s["findings"].([]any) {
			f := f.(map[string]any)
			sig := f["signature"].(string)
			sc, err := corpus.Read(f["script"].(string))
			require.NoError(t, err)
			last := sc.Steps[len(sc.Steps)-1].Op
			require.Equal(t, strings.Split(sig, "/")[1], last.Kind.String(), "seed %s: %s filed under a script ending in %s", seed, sig, last.Kind)
		}
	}
}
