package corpus_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// fakeChecker replays nothing: a script's first op line decides its fate.
type fakeChecker struct{ tries map[string]int } // first op line -> tries that reproduce

func (f fakeChecker) Stale(c *corpus.Candidate) string {
	if c.Header.A == "gone" {
		return "implementation gone is not here"
	}
	return ""
}

func (f fakeChecker) Reproduce(_ context.Context, c *corpus.Candidate, tries int) (corpus.Verdict, error) {
	line := strings.Split(strings.TrimSpace(strings.SplitN(c.Text, "subsystem ids\n", 2)[1]), "\n")[0]
	n, ok := f.tries[line]
	if !ok {
		n = tries
	}
	return corpus.Verdict{Tries: tries, Reproduced: min(n, tries)}, nil
}

// finding is the text of a finding file found on pair a,optimized.
func finding(sig, a string, ops ...string) string {
	return "# ipcfuzz divergence\n# found by: ipcfuzz compare " + a + " optimized --subsystem ids --engine rapid --seed 1 --equiv exact\n" +
		"# signature " + sig + "\nsubsystem ids\n" + strings.Join(ops, "\n") + "\n"
}

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// snapshot reads every file under dir but the manifest.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != corpus.ManifestName {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			out[p] = string(data)
		}
		return err
	}))
	return out
}

// mergeFixture lays out a committed corpus and two shards' outputs with
// overlapping, stale, unparsable, flaky and non-reproducing files.
func mergeFixture(t *testing.T) (into, shard1, shard2 string) {
	root := t.TempDir()
	into, shard1, shard2 = filepath.Join(root, "corpus"), filepath.Join(root, "shard-0"), filepath.Join(root, "shard-1")
	write(t, filepath.Join(into, "ids", "c1.ops"), finding("S1", "mutant", "rmid shm id=-1", "rmid shm id=-2"))
	write(t, filepath.Join(into, "ids", "seed-x.ops"), "subsystem ids\nstat msg id=-1\n")
	write(t, filepath.Join(into, "ids", "broken.ops"), "subsystem ids\nfrobnicate\n")

	write(t, filepath.Join(shard1, "summary.json"), `{"date":"2026-12-01","kernel":"6.18.0-test","findings":[{"script":"/elsewhere/corpus/ids/f1.ops","hits":5}]}`)
	write(t, filepath.Join(shard1, "corpus", "ids", "f1.ops"), finding("S2", "mutant", "rmid msg id=-1", "rmid msg id=-2", "rmid msg id=-3"))
	write(t, filepath.Join(shard1, "corpus", "ids", "f2.ops"), finding("S1", "other", "rmid shm id=-1", "rmid shm id=-2")) // = c1's script
	write(t, filepath.Join(shard1, "corpus", "ids", "f3.ops"), "subsystem ids\nget msg key=banana\n")
	write(t, filepath.Join(shard1, "corpus", "ids", "f4.ops"), finding("S9", "gone", "rmid sem id=-9"))

	write(t, filepath.Join(shard2, "ids", "f5.ops"), finding("S2", "mutant", "rmid msg id=-1", "rmid msg id=-2", "rmid msg id=-3"))
	write(t, filepath.Join(shard2, "ids", "f6.ops"), finding("S2", "mutant", "rmid msg id=-1", "rmid msg id=-4"))
	write(t, filepath.Join(shard2, "ids", "f7.ops"), finding("S3", "mutant", "stat shm id=-7"))
	write(t, filepath.Join(shard2, "ids", "f8.ops"), finding("S4", "mutant", "stat shm id=-8"))
	write(t, filepath.Join(shard2, "ids", "f9.ops"), finding("S1", "mutant", "rmid shm id=-1"))
	day := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, f := range []string{"f5", "f6", "f7", "f8", "f9"} {
		require.NoError(t, os.Chtimes(filepath.Join(shard2, "ids", f+".ops"), day, day))
	}
	return into, shard1, shard2
}

func TestMergeCounts(t *testing.T) {
	into, shard1, shard2 := mergeFixture(t)
	before := snapshot(t, into)
	chk := fakeChecker{tries: map[string]int{"stat shm id=-7": 1, "stat shm id=-8": 0}}
	rep, err := corpus.Merge(context.Background(), corpus.MergeOptions{Into: into, Inputs: []string{shard1, shard2}, Tries: 3, Date: "2026-12-03", Checker: chk})
	require.NoError(t, err)

	require.Equal(t, 9, rep.Files)
	require.Equal(t, 1, rep.Unparsable, rep.Dropped)
	require.Equal(t, 1, rep.Stale, rep.Dropped)
	require.Equal(t, 1, rep.Duplicates)
	require.Equal(t, 1, rep.Known)
	require.Equal(t, 1, rep.NotReproduced)
	require.Equal(t, 1, rep.Flaky)
	require.Equal(t, 1, rep.Larger) // f1: f6 is the smaller S2
	require.Len(t, rep.Added, 3)    // f6 (S2), f7 (S3, flaky), f9 (S1, smaller than c1)
	require.Len(t, rep.Dropped, 3)

	var newSigs []string
	for _, s := range rep.New {
		newSigs = append(newSigs, s.Signature)
		require.Contains(t, s.Text, "subsystem ids")
	}
	require.Equal(t, []string{"S2", "S3"}, newSigs)
	require.Len(t, rep.Again, 1)
	require.Equal(t, "S1", rep.Again[0].Signature)
	require.Equal(t, 2, rep.Again[0].Tonight) // f2 (known script) and f9

	m, err := corpus.ReadManifest(into)
	require.NoError(t, err)
	s2 := m.Find("S2")
	require.NotNil(t, s2)
	require.Equal(t, 7, s2.Hits) // 5 from shard-0's summary, 1 each for f5 and f6
	require.Equal(t, 2, s2.Ops)
	require.Equal(t, "2026-12-01", s2.FirstSeen)
	require.Equal(t, "2026-12-02", s2.LastSeen)
	require.Equal(t, []string{"6.18.0-test"}, s2.Kernels)
	require.True(t, m.Find("S3").Flaky)
	require.Nil(t, m.Find("S4"))
	require.Equal(t, 1, m.Find("S1").Ops, "the smaller S1 script becomes the record's")

	flaky, err := os.ReadFile(filepath.Join(into, m.Find("S3").Script))
	require.NoError(t, err)
	require.Contains(t, string(flaky), corpus.FlakyMark+" reproduced 1 of 3 tries")

	after := snapshot(t, into)
	for path, text := range before {
		require.Equal(t, text, after[path], "committed file %s was changed or removed", path)
	}
	require.Len(t, rep.Shards, 1) // shard-0 has a summary.json
	require.Equal(t, "6.18.0-test", rep.Shards[0].Kernel)
	md := rep.Markdown()
	require.Contains(t, md, "## New signatures (2)")
	require.Contains(t, md, "## Shards")
}

// Merging the same inputs again changes nothing but the hit counts:
// every script is known, and no committed file goes.
func TestMergeTwiceKeepsEverything(t *testing.T) {
	into, shard1, shard2 := mergeFixture(t)
	o := corpus.MergeOptions{Into: into, Inputs: []string{shard1, shard2}, Date: "2026-12-03", Checker: fakeChecker{}}
	_, err := corpus.Merge(context.Background(), o)
	require.NoError(t, err)
	before := snapshot(t, into)
	rep, err := corpus.Merge(context.Background(), o)
	require.NoError(t, err)
	require.Empty(t, rep.Added)
	require.Empty(t, rep.New)
	after := snapshot(t, into)
	require.Equal(t, before, after)
}

// New signatures come before known ones in the markdown summary.
func TestMarkdownNewFirst(t *testing.T) {
	rep := &corpus.MergeReport{
		New:   []corpus.Seen{{Record: corpus.Record{Signature: "ids/get/ENOENT-EEXIST", Script: "ids/a.ops"}, Tonight: 3, Text: "subsystem ids\n"}},
		Again: []corpus.Seen{{Record: corpus.Record{Signature: "ids/rmid/EIDRM-EINVAL", Script: "ids/b.ops", Hits: 9}, Tonight: 2}},
	}
	md := rep.Markdown()
	require.Less(t, strings.Index(md, "ENOENT-EEXIST"), strings.Index(md, "EIDRM-EINVAL"))
	require.Contains(t, md, "```\nsubsystem ids\n```")
}

func TestParseHeader(t *testing.T) {
	h := corpus.ParseHeader(finding("ids/rmid/EIDRM-EINVAL", "./twobugs", "rmid shm id=-1"))
	require.Equal(t, corpus.Header{Kind: "divergence", Format: 1, Command: "ipcfuzz compare ./twobugs optimized --subsystem ids --engine rapid --seed 1 --equiv exact",
		Signature: "ids/rmid/EIDRM-EINVAL", A: "./twobugs", B: "optimized", Relation: "exact", Engine: "rapid", Seed: 1, HasSeed: true}, h)
	require.False(t, corpus.ParseHeader("subsystem ids\n").IsFinding())
	marked := corpus.MarkFlaky(finding("s", "a", "rmid shm id=-1"), "reproduced 1 of 3")
	require.True(t, corpus.ParseHeader(marked).Flaky)
	require.Equal(t, marked, corpus.MarkFlaky(marked, "again"))
}

// record reads the manifest of the corpus into and returns its record of
// the finding sig, which must be there.
func record(t *testing.T, into, sig string) *corpus.Record {
	t.Helper()
	m, err := corpus.ReadManifest(into)
	require.NoError(t, err)
	r := m.Find(sig)
	require.NotNil(t, r)
	return r
}

// A findings directory of compare (no summary.json) gives the manifest
// the hits and the kernel its files' headers record; a second merge of
// another run adds its hits and keeps both kernels.
func TestMergeKeepsHitsAndKernels(t *testing.T) {
	root := t.TempDir()
	into, run1, run2 := filepath.Join(root, "corpus"), filepath.Join(root, "run1"), filepath.Join(root, "run2")
	f := sample(t, "naive:alloc=legacy", "kernel")
	_, err := corpus.Store(run1, f, "")
	require.NoError(t, err)
	f.Hits, f.Kernel, f.Date = 4, "6.19.0-other", "2026-12-03T01:00:00Z"
	_, err = corpus.Store(run2, f, "")
	require.NoError(t, err)
	for _, in := range []string{run1, run2} {
		_, err := corpus.Merge(context.Background(), corpus.MergeOptions{Into: into, Inputs: []string{in}, Date: "2026-12-04", Checker: fakeChecker{}})
		require.NoError(t, err)
	}
	r := record(t, into, "ids/get/ok-ENOSPC")
	require.Equal(t, 7, r.Hits)
	require.Equal(t, []string{"6.18.0-test", "6.19.0-other"}, r.Kernels)
	require.Equal(t, "2026-12-02", r.FirstSeen)
	require.Equal(t, "2026-12-03", r.LastSeen)
	require.Equal(t, "naive:alloc=legacy,kernel", r.Pair)
}

// A corpus whose manifest lost a finding's record (or never had one)
// gets it back from the file's header: hits, date and kernel.
func TestMergeRecordsFromHeaders(t *testing.T) {
	root := t.TempDir()
	into, empty := filepath.Join(root, "corpus"), filepath.Join(root, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))
	_, err := corpus.Store(into, sample(t, "naive:alloc=legacy", "kernel"), "")
	require.NoError(t, err)
	_, err = corpus.Merge(context.Background(), corpus.MergeOptions{Into: into, Inputs: []string{empty}, Date: "2026-12-04", Checker: fakeChecker{}})
	require.NoError(t, err)
	r := record(t, into, "ids/get/ok-ENOSPC")
	require.Equal(t, 3, r.Hits)
	require.Equal(t, []string{"6.18.0-test"}, r.Kernels)
	require.Equal(t, "2026-12-02", r.FirstSeen)
}
