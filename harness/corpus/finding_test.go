package corpus_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

// sample is a divergence at step 2 of a three-step ids script, with a
// final group that differs.
func sample(t *testing.T, a, b string) *corpus.Finding {
	t.Helper()
	sc := opstest.Script(t, "subsystem ids\nh1 = get msg key=0x0 mode=0600\nget msg key=0x0 mode=0600\nrmid msg h1\n")
	res := func(texts ...string) []ops.Result {
		var out []ops.Result
		for i, text := range texts {
			r, err := ops.ParseResult(sc.Steps[i].Op, text)
			require.NoError(t, err)
			out = append(out, r)
		}
		return out
	}
	return &corpus.Finding{
		Header: corpus.Header{
			Kind: "divergence", Version: "(devel)", Revision: "0123abcd (modified)", Date: "2026-12-02T14:05:11Z",
			Command: "ipcfuzz compare " + a + " " + b + " --subsystem ids --engine rapid --seed 7 --equiv exact",
			Seed:    7, Index: 12, ScriptSeed: 99, HasSeed: true, Engine: "rapid", Relation: "exact",
			A: a, B: b, AInfo: "naive 1", BInfo: "kernel Linux 6.18.0-test", Kernel: "6.18.0-test",
			Facts: "shm_max_pages=4096", Signature: "ids/get/ok-ENOSPC", Hits: 3, Stated: "B",
		},
		Script: sc,
		A:      corpus.Side{Name: a, Results: res("id=0", "id=32769", "ok")},
		B:      corpus.Side{Name: b, Results: res("id=0", "id=1", "ok")},
		Notes:  []string{"shrunk from 40 to 3 ops", "step 2: get msg key=0x0 mode=0600: A -> id=32769, B -> id=1"},
		Final:  []corpus.FinalGroup{{Name: "msg", A: "0 32769\n", B: "0 1\n"}},
	}
}

func texts(sc *ops.Script, rs []ops.Result) []string {
	var out []string
	for i, r := range rs {
		out = append(out, ops.FormatResult(sc.Steps[i].Op, r))
	}
	return out
}

// A finding reads back as written: every header field, both sides'
// results, the notes and the final groups; the body states B's results.
func TestFindingRoundTrip(t *testing.T) {
	f := sample(t, "naive:alloc=legacy", "kernel")
	text := corpus.Render(f)
	require.Contains(t, text, "\nh1 = get msg key=0x0 mode=0600 -> id=0\nget msg key=0x0 mode=0600 -> id=1\nrmid msg h1 -> ok\n", "the body states B's results:\n%s", text)
	require.Contains(t, text, "# A step 2 -> id=32769\n")
	g, err := corpus.ParseFinding("x.ops", text)
	require.NoError(t, err)
	want := f.Header
	want.Format = corpus.FormatVersion
	require.Equal(t, want, g.Header)
	require.Equal(t, texts(f.Script, f.A.Results), texts(g.Script, g.A.Results))
	require.Equal(t, texts(f.Script, f.B.Results), texts(g.Script, g.B.Results))
	require.Equal(t, "naive 1", g.A.Info)
	require.Equal(t, f.Notes, g.Notes)
	require.Equal(t, f.Final, g.Final)
	require.Equal(t, corpus.Render(g), text, "rendering what was read gives the same text")
	exp, err := g.Expected("A")
	require.NoError(t, err)
	require.Equal(t, texts(f.Script, f.A.Results), texts(g.Script, exp))
	_, err = g.Expected("C")
	require.Error(t, err)
}

// A side that stopped answering is said so, and reads back shorter.
func TestFindingShortSide(t *testing.T) {
	f := sample(t, "a", "b")
	f.A.Results = f.A.Results[:1]
	g, err := corpus.ParseFinding("x.ops", corpus.Render(f))
	require.NoError(t, err)
	require.Len(t, g.A.Results, 1)
	require.Len(t, g.B.Results, 3)
}

// A plugin failure states no results; a seed reads as side A's (and B's)
// expectations with no header.
func TestFindingWithoutResults(t *testing.T) {
	f := sample(t, "./bin/crashy", "optimized")
	f.Kind, f.Stated, f.A.Results, f.B.Results, f.Final = "plugin failure", "", nil, nil, nil
	f.Stderr = "x.ops.stderr"
	text := corpus.Render(f)
	require.Contains(t, text, "# stated: none\n")
	g, err := corpus.ParseFinding("x.ops", text)
	require.NoError(t, err)
	require.Nil(t, g.A.Results)
	require.Equal(t, "x.ops.stderr", g.Stderr)
	for _, st := range g.Script.Steps {
		require.Nil(t, st.Want)
	}

	seed, err := corpus.ParseFinding("s.ops", "subsystem ids\nstat msg id=-1 -> EINVAL\n")
	require.NoError(t, err)
	require.False(t, seed.IsFinding())
	require.Len(t, seed.A.Results, 1)
	require.Len(t, seed.B.Results, 1)
}

// Files of format 1 (before headers had fields) still read: the pair, the
// relation, the seed and the engine from the "found by" command, the
// signature line, the notes.
func TestFindingFormat1(t *testing.T) {
	text := `# ipcfuzz plugin failure
# found by: ipcfuzz compare kernel optimized --subsystem ids --engine gopter --seed 5 --equiv ids-renamed
# kernel: plugin "kernel": crashed: Exec: process exited (signal: killed)
# signature ids/plugin-failure/kernel/crashed
subsystem ids
stat msg id=-1
`
	g, err := corpus.ParseFinding("old.ops", text)
	require.NoError(t, err)
	require.Equal(t, 1, g.Format)
	require.Equal(t, "plugin failure", g.Kind)
	require.Equal(t, "kernel", g.Header.A)
	require.Equal(t, "optimized", g.Header.B)
	require.Equal(t, "ids-renamed", g.Relation)
	require.Equal(t, "gopter", g.Engine)
	require.Equal(t, uint64(5), g.Seed)
	require.Equal(t, "ids/plugin-failure/kernel/crashed", g.Signature)
	require.Empty(t, g.Kernel, "a format 1 note is not a field")
	require.Len(t, g.Notes, 1)
}

// A format 2 header's seed, engine, relation and sides are its fields: the
// command line is for people, and nothing is read back out of it.
func TestFindingFormat2FieldsNotCommand(t *testing.T) {
	text := `# ipcfuzz divergence
# format: 2
# command: ipcfuzz compare kernel optimized --subsystem ids --engine gopter --seed 5 --equiv ids-renamed
# seed: 7
# script: 1 (script seed 3)
# engine: rapid
# side A: naive
# side B: optimized
# signature: ids/x
subsystem ids
stat msg id=-1
`
	g, err := corpus.ParseFinding("new.ops", text)
	require.NoError(t, err)
	require.Equal(t, 2, g.Format)
	require.Equal(t, uint64(7), g.Seed)
	require.Equal(t, "rapid", g.Engine)
	require.Equal(t, "exact", g.Relation, "no relation field: the default, not the command's --equiv")
	require.Equal(t, "naive", g.Header.A)
	require.Equal(t, "optimized", g.Header.B)

	bare := strings.Replace(text, "# seed: 7\n# script: 1 (script seed 3)\n# engine: rapid\n", "", 1)
	g, err = corpus.ParseFinding("new.ops", bare)
	require.NoError(t, err)
	require.False(t, g.HasSeed, "a seed only in the command is not read back")
	require.Empty(t, g.Engine)
}

// A header line that does not parse names its file and line.
func TestFindingBadHeader(t *testing.T) {
	text := corpus.Render(sample(t, "a", "b"))
	bad := strings.Replace(text, "# hits: 3", "# hits: many", 1)
	_, err := corpus.ParseFinding("bad.ops", bad)
	require.ErrorContains(t, err, "bad.ops:")
	require.ErrorContains(t, err, `header "hits"`)
	bad = strings.Replace(text, "# A step 2 -> id=32769", "# A step 9 -> id=32769", 1)
	_, err = corpus.ParseFinding("bad.ops", bad)
	require.ErrorContains(t, err, "A step 9: the script has 3 steps")
}

// Two runs on different pairs that find the same script keep both
// records; the same record stored twice gets a second file; no file is
// ever replaced, and the stderr goes beside the one that names it.
func TestStoreKeepsEveryRecord(t *testing.T) {
	dir := t.TempDir()
	p1, err := corpus.Store(dir, sample(t, "naive:alloc=legacy", "kernel"), "")
	require.NoError(t, err)
	p2, err := corpus.Store(dir, sample(t, "naive:alloc=legacy", "optimized"), "")
	require.NoError(t, err)
	require.NotEqual(t, p1, p2)
	first, err := os.ReadFile(p1)
	require.NoError(t, err)
	p3, err := corpus.Store(dir, sample(t, "naive:alloc=legacy", "kernel"), "the stderr")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(p1, ".ops")+"-2.ops", p3)
	again, err := os.ReadFile(p1)
	require.NoError(t, err)
	require.Equal(t, first, again, "the first record was replaced")
	for _, p := range []string{p1, p2, p3} {
		g, err := corpus.ReadFinding(p)
		require.NoError(t, err)
		require.Equal(t, "ids/get/ok-ENOSPC", g.Signature)
	}
	g, err := corpus.ReadFinding(p3)
	require.NoError(t, err)
	require.Equal(t, filepath.Base(p3)+".stderr", g.Stderr)
	stderr, err := os.ReadFile(p3 + ".stderr")
	require.NoError(t, err)
	require.Equal(t, "the stderr", string(stderr))
	_, err = os.Stat(p1 + ".stderr")
	require.Error(t, err, "a stderr beside a record that has none")
	require.Contains(t, filepath.Base(p1), "get_ok-ENOSPC~naive_alloc=legacy~kernel~")
	entries, err := os.ReadDir(filepath.Join(dir, "ids"))
	require.NoError(t, err)
	require.Len(t, entries, 4, "no temporary file is left: %v", entries)
}

// A finding cannot be stored where nothing can be written; CheckWritable
// says so before any run, without leaving anything behind.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, corpus.CheckWritable(filepath.Join(dir, "not", "yet")))
	_, err := os.Stat(filepath.Join(dir, "not"))
	require.Error(t, err, "the check made the directory")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	require.ErrorContains(t, corpus.CheckWritable(filepath.Join(file, "x")), "is not a directory")
}

// envManifestChild makes the test binary a child that writes a manifest
// under a file size limit.
const envManifestChild = "IPCFUZZ_TEST_MANIFEST_CHILD"

// A manifest write stopped half-way (the file size limit, RLIMIT_FSIZE,
// stops it at 4 KiB: a Go process gets EFBIG, where a C one would die of
// SIGXFSZ) leaves the previous manifest whole: the child that writes a
// larger one fails, and the manifest reads as before.
func TestManifestWriteKilledKeepsThePrevious(t *testing.T) {
	if dir := os.Getenv(envManifestChild); dir != "" {
		m := &corpus.Manifest{}
		for i := range 200 {
			m.Signatures = append(m.Signatures, corpus.Record{Signature: fmt.Sprintf("ids/get/sig-%03d", i), Script: "ids/x.ops", Hits: i, Kernels: []string{"6.18.0"}})
		}
		lim := syscall.Rlimit{Cur: 4096, Max: 4096}
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
		err := m.Write(dir)
		fmt.Fprintf(os.Stderr, "write: %v\n", err)
		os.Exit(3)
	}
	dir := t.TempDir()
	before := &corpus.Manifest{Signatures: []corpus.Record{{Signature: "ids/rmid/EIDRM-EINVAL", Script: "ids/a.ops", Hits: 9, FirstSeen: "2026-11-30", Kernels: []string{"6.18.0"}}}}
	require.NoError(t, before.Write(dir))
	want, err := os.ReadFile(filepath.Join(dir, corpus.ManifestName))
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run", "^TestManifestWriteKilledKeepsThePrevious$")
	cmd.Env = append(os.Environ(), envManifestChild+"="+dir)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the child wrote a manifest past the limit: %s", out)
	t.Logf("the child: %v: %s", err, out)

	got, err := os.ReadFile(filepath.Join(dir, corpus.ManifestName))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	m, err := corpus.ReadManifest(dir)
	require.NoError(t, err)
	require.Equal(t, 9, m.Find("ids/rmid/EIDRM-EINVAL").Hits)
	// What the killed write left (a hidden temporary file) is no script.
	files, err := corpus.Files(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}
