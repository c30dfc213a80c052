package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// compare --format ktap is KTAP the kernel's own parser
// (tools/testing/kunit/kunit_parser.py) reads as one failed test per
// finding --json lists and a passed test for the run; a compare that
// finds nothing is one passed test.
func TestCompareKTAP(t *testing.T) {
	t.Parallel()
	long(t) // end to end, seconds each: the long pass runs it (issue 31: the suite that fits)
	parser := testkit.KunitParser(t)
	args := []string{"compare", "naive:alloc=legacy", "optimized", "--checks", "100", "--seed", "1", "--keep-going", "--jobs", "1"}
	js := ipcfuzz(t, append(args, "--json", "--corpus", t.TempDir())...)
	require.Equal(t, 1, js.code, js.stderr)
	var sigs []string
	for _, f := range summary(t, js)["findings"].([]any) {
		sigs = append(sigs, f.(map[string]any)["signature"].(string))
	}
	require.GreaterOrEqual(t, len(sigs), 2)

	r := ipcfuzz(t, append(args, "--format", "ktap", "--corpus", t.TempDir())...)
	require.Equal(t, 1, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "KTAP version 1\n"), r.stdout)
	k := testkit.RequireKTAP(t, parser, r.stdout, "FAILURE", [5]int{1, len(sigs), 0, 0, 0})
	for i, s := range sigs {
		require.Equal(t, s, k.Tests[i].Name)
	}
	require.Equal(t, "compare", k.Tests[len(sigs)].Name)

	r = ipcfuzz(t, "compare", "naive", "optimized", "--checks", "50", "--seed", "1", "--format", "ktap", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	testkit.RequireKTAP(t, parser, r.stdout, "SUCCESS", [5]int{1, 0, 0, 0, 0})
}

// replay --format ktap is one test per file, in order: the kernel's
// parser reads a file that agrees as passed and one that does not as
// failed.
func TestReplayKTAP(t *testing.T) {
	t.Parallel()
	long(t) // end to end, seconds each: the long pass runs it (issue 31: the suite that fits)
	parser := testkit.KunitParser(t)
	dir := t.TempDir()
	agrees := writeFile(t, dir, "agrees.ops", "subsystem ids\nget sem key=0x0 mode=0600 size=1\n")
	differs := writeFile(t, dir, "differs.ops", "subsystem ids\nget sem key=0x0 mode=0600 size=1\nget sem key=0x0 mode=0600 size=1\n")
	r := ipcfuzz(t, "replay", agrees, differs, agrees, "--impls", "naive:alloc=legacy,optimized", "--format", "ktap")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	k := testkit.RequireKTAP(t, parser, r.stdout, "FAILURE", [5]int{2, 1, 0, 0, 0})
	require.Equal(t, differs, k.Tests[1].Name)
	require.Contains(t, r.stdout, "# the implementations disagree at step 2: ")

	r = ipcfuzz(t, "replay", agrees, "--impls", "naive,optimized", "--format", "ktap")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	k = testkit.ParseKTAP(t, parser, r.stdout)
	require.Equal(t, [5]int{1, 0, 0, 0, 0}, k.Counts(), "%+v\n%s", k, r.stdout)
}

// --format takes the formats there are, --json is --format json, and a
// format there is none of is refused in one line with exit 2.
func TestFormatFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"compare", "naive", "optimized", "--format", "tap"},
		{"replay", "x.ops", "--format", "html"},
		{"compare", "naive", "optimized", "--json", "--format", "ktap"},
	} {
		r := refused(t, "", args...)
		require.Empty(t, r.stdout)
	}
	r := ipcfuzz(t, "compare", "naive", "optimized", "--checks", "20", "--seed", "1", "--json", "--format", "json", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	require.EqualValues(t, 20, summary(t, r)["checks"])
	r = ipcfuzz(t, "compare", "naive", "optimized", "--checks", "20", "--seed", "1", "--format", "junit", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `<testsuites name="ipcfuzz" tests="1" failures="0" skipped="0"`)
}

// A plugin that crashes is a failed KTAP test named after its signature,
// with the crash in its diagnostics.
func TestCrashKTAP(t *testing.T) {
	t.Parallel()
	long(t) // end to end, seconds each: the long pass runs it (issue 31: the suite that fits)
	parser := testkit.KunitParser(t)
	crashy := testProgram(t, "./testdata/crashy")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_CRASH=panic"}, "compare", crashy, "optimized", "--checks", "20", "--seed", "1", "--format", "ktap", "--corpus", t.TempDir())
	require.Equal(t, 1, r.code, r.stderr)
	k := testkit.ParseKTAP(t, parser, r.stdout)
	require.Equal(t, [5]int{1, 1, 0, 0, 0}, k.Counts(), "%+v\n%s", k, r.stdout)
	require.Equal(t, "ids/plugin-failure/"+crashy+"/crashed", k.Tests[0].Name)
	require.Contains(t, r.stdout, "# plugin failure ids/plugin-failure/")
	require.Contains(t, r.stdout, "panic: crashy: the listing of sem is broken (panic)")
}
