package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// A finding file says where, when and how it was found, and its body
// states the reference side's results, so that replay checks them: on the
// pair it diverges at the step the header names, on B alone it passes.
func TestFindingIsSelfDescribing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugin := twoBugs(t)
	_, s := compareFinds(t, dir, plugin, "optimized", "--keep-going", "--checks", "150", "--seed", "3")
	require.EqualValues(t, 3, s["seed"])
	require.Equal(t, "rapid", s["engine"])
	require.Equal(t, "exact", s["relation"])
	require.Contains(t, s, "kernel")
	findings := s["findings"].([]any)
	require.NotEmpty(t, findings)
	for _, x := range findings {
		x := x.(map[string]any)
		path := x["script"].(string)
		f, err := corpus.ReadFinding(path)
		require.NoError(t, err)
		require.Equal(t, corpus.FormatVersion, f.Format)
		require.Equal(t, "divergence", f.Kind)
		require.Equal(t, x["signature"], f.Signature)
		require.EqualValues(t, x["hits"], f.Hits, "the file holds the run's final hit count")
		require.Equal(t, plugin, f.Header.A)
		require.Equal(t, "optimized", f.Header.B)
		require.Equal(t, "optimized 1", f.BInfo)
		require.True(t, f.HasSeed)
		require.Equal(t, uint64(3), f.Seed)
		require.Equal(t, "rapid", f.Engine)
		require.NotEmpty(t, f.Version)
		require.NotEmpty(t, f.Revision)
		require.Regexp(t, `^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, f.Date)
		require.Contains(t, f.Command, "--seed 3")
		require.Equal(t, "B", f.Stated)
		require.Len(t, f.B.Results, len(f.Script.Steps))
		require.Regexp(t, `^rmid_EIDRM-EINVAL~twobugs-[0-9a-f]{6}~optimized~[0-9a-f]{12}\.ops$|^get_ENOENT-EEXIST~twobugs-[0-9a-f]{6}~optimized~[0-9a-f]{12}\.ops$`, filepath.Base(path))

		bad := ipcfuzz(t, "replay", path, "--impls", plugin+",optimized")
		require.Equal(t, 1, bad.code, "replay of a divergence on its pair: %s%s", bad.stdout, bad.stderr)
		good := ipcfuzz(t, "replay", path, "--impls", "optimized,naive")
		require.Equal(t, 0, good.code, "the stated results are B's: %s%s", good.stdout, good.stderr)
	}
}

// Two runs on different pairs that find the same script into one
// directory keep both records.
func TestTwoPairsKeepBothRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugin := twoBugs(t)
	var paths []string
	for _, b := range []string{"optimized", "naive"} {
		_, s := compareFinds(t, dir, plugin, b, "--checks", "1000", "--seed", "3")
		paths = append(paths, s["scripts"].([]any)[0].(string))
	}
	require.NotEqual(t, paths[0], paths[1])
	var scripts []string
	for i, b := range []string{"optimized", "naive"} {
		f, err := corpus.ReadFinding(paths[i])
		require.NoError(t, err, "the first run's record is gone")
		require.Equal(t, b, f.Header.B)
		scripts = append(scripts, corpus.OpsHash(f.Script))
	}
	require.Equal(t, scripts[0], scripts[1], "the test wants the same script found twice")
}

// A read-only findings directory is refused before anything runs: exit 2,
// one line, no check made.
func TestReadOnlyCorpusRefusedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"compare", "naive", "optimized", "--checks", "10", "--seed", "1", "--json", "--corpus", dir}
	var cmd *exec.Cmd
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		cmd = exec.Command(bin, args...)
	} else {
		// Root writes through permissions: a read-only bind mount, in a
		// mount namespace of the test's own.
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("a read-only directory for root needs unshare (util-linux), which is not on PATH")
		}
		script := `mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"`
		cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, dir, bin}, args...)...)
	}
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode(), string(ee.Stderr))
	stderr := string(ee.Stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, "findings directory "+dir+" cannot be written")
	require.Empty(t, out, "something ran")
}

// A finding that cannot be stored (its subsystem's directory is a file)
// is printed in full and kept in --json, and --keep-going goes on.
func TestUnstoredFindingIsKept(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ids"), []byte("in the way\n"), 0o644))
	r, s := compareFinds(t, dir, twoBugs(t), "optimized", "--keep-going", "--checks", "1000", "--seed", "3")
	require.EqualValues(t, 1000, s["checks"], "the run stopped at its first finding")
	findings := s["findings"].([]any)
	require.Len(t, findings, 2)
	require.EqualValues(t, 2, s["unstored"])
	for _, x := range findings {
		x := x.(map[string]any)
		text := x["text"].(string)
		f, err := corpus.ParseFinding("json", text)
		require.NoError(t, err)
		require.Equal(t, x["signature"], f.Signature)
		require.Contains(t, x["store_error"], "not a directory")
		require.Contains(t, r.stderr, strings.SplitN(text, "\n", 2)[0])
	}
	require.Contains(t, r.stderr, "could not store a finding")
}

// In a user namespace (unshare -Ur) setgroups is denied and one uid is
// mapped: the kernel side cannot run operations as= another user, and
// refuses at start in one line that says so.
func TestKernelRefusesInUserNamespace(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux), which is not on PATH")
	}
	if out, err := exec.Command("unshare", "-Ur", "true").CombinedOutput(); err != nil {
		t.Skipf("this machine gives no user namespace (unshare -Ur true: %v: %s)", err, out)
	}
	cmd := exec.Command("unshare", "-Ur", bin, "compare", "optimized", "kernel", "--checks", "20", "--seed", "1", "--corpus", t.TempDir())
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	stderr := string(ee.Stderr)
	require.Equal(t, 2, ee.ExitCode(), stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, "cannot run operations as another user (as=)")
	// As root the line diagnoses the namespace ("no CAP_SETUID/CAP_SETGID
	// over uid 1000 ... setgroups denied"); as a user (.ci/run's second
	// pass) it names the failing setgroups: either way, setgroups.
	require.Contains(t, stderr, "setgroups")
	require.NotContains(t, stderr, "plugin failure")
}

// A plugin killed by SIGKILL once (as the OOM killer would) whose scripts
// do not fail again on a fresh plugin is an infrastructure event: exit 3,
// one line, no finding file, the run compares everything.
func TestKilledOnceIsInfrastructure(t *testing.T) {
	t.Parallel()
	plugin := testProgram(t, "./testdata/killedonce")
	marker := filepath.Join(t.TempDir(), "marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))
	dir := t.TempDir()
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_KILLEDONCE=" + marker}, "compare", plugin, "optimized", "--checks", "200", "--seed", "1", "--json", "--corpus", dir)
	require.NoFileExists(t, marker, "the plugin was never killed: the test proves nothing")
	require.Equal(t, cli.ExitInfra, r.code, r.stderr)
	s := summary(t, r)
	require.EqualValues(t, 200, s["checks"])
	require.EqualValues(t, 1, s["infrastructure"])
	require.EqualValues(t, 0, s["plugin_failures"])
	require.Empty(t, s["findings"])
	ev := s["infrastructure_events"].([]any)[0].(map[string]any)
	require.Contains(t, ev["error"], "signal: killed")
	require.Contains(t, ev["reason"], "not a finding")
	require.Contains(t, ev["stderr"], "killedonce: killed for marker", "the event keeps what the side said last")
	require.Equal(t, 1, strings.Count(r.stderr, "infrastructure event: "), r.stderr)
	files, err := corpus.Files(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}

// A nightly compare shard treats compare's infrastructure event as
// infrastructure (exit 2, status and reason in its summary), not a bug.
func TestNightlyInfrastructureEventIsNotABug(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	needNightlyTools(t)
	plugin := testProgram(t, "./testdata/killedonce")
	marker := filepath.Join(t.TempDir(), "marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))
	tab := table(t, "compare", "ids", "ipcfuzz compare "+plugin+" optimized --subsystem ids --engine rapid --equiv exact")
	dir, s := runShard(t, []string{"IPCFUZZ_SHARDS=" + tab, "IPCFUZZ_KILLEDONCE=" + marker}, "0", "3s", "infrastructure")
	require.NoFileExists(t, marker, "the plugin was never killed: the test proves nothing")
	require.Contains(t, s["reason"], "infrastructure event, not a finding")
	require.Contains(t, s["reason"], "killedonce")
	require.Empty(t, s["findings"])
	files, err := corpus.Files(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}

// A finding against the kernel names its release and the facts the kernel
// side handed over, in the file and in --json.
func TestKernelFindingNamesItsRelease(t *testing.T) {
	t.Parallel()
	needKernel(t)
	dir := t.TempDir()
	// A few scripts: the legacy allocator differs at its second get, and a
	// batch of 300 would run its seq wraps on the kernel before stopping.
	_, s := compareFinds(t, dir, "naive:alloc=legacy", "kernel", "--checks", "5", "--seed", "1")
	release := strings.TrimPrefix(kernel.Release(), "Linux ")
	require.NotEmpty(t, release)
	require.Equal(t, release, s["kernel"])
	f, err := corpus.ReadFinding(s["scripts"].([]any)[0].(string))
	require.NoError(t, err)
	require.Equal(t, release, f.Kernel)
	require.Equal(t, "kernel "+kernel.Release(), f.BInfo)
	require.Equal(t, "naive:alloc=legacy", f.Header.A)
	require.Contains(t, f.Facts, "shm_max_pages=")
}

// A plugin killed by SIGKILL twice, on the whole batch and on one of its
// scripts run one at a time, whose script then runs alone on a fresh plugin
// without failing, is an infrastructure event too.
func TestKilledTwiceIsInfrastructure(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	plugin := testProgram(t, "./testdata/killedonce")
	tmp := t.TempDir()
	markers := []string{filepath.Join(tmp, "m1"), filepath.Join(tmp, "m2")}
	for _, m := range markers {
		require.NoError(t, os.WriteFile(m, nil, 0o600))
	}
	dir := t.TempDir()
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_KILLEDONCE=" + strings.Join(markers, ":")}, "compare", plugin, "optimized", "--checks", "100", "--seed", "1", "--jobs", "1", "--json", "--corpus", dir)
	require.NoFileExists(t, markers[1], "the plugin was not killed twice: the test proves nothing")
	require.Equal(t, cli.ExitInfra, r.code, r.stderr)
	s := summary(t, r)
	require.EqualValues(t, 1, s["infrastructure"], r.stderr)
	require.EqualValues(t, 0, s["plugin_failures"])
	ev := s["infrastructure_events"].([]any)[0].(map[string]any)
	require.EqualValues(t, 1, ev["scripts"])
	require.Contains(t, ev["reason"], "killed by SIGKILL")
	files, err := corpus.Files(dir)
	require.NoError(t, err)
	require.Empty(t, files)
}
