package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// bin is the ipcfuzz binary built once for these end-to-end tests.
var bin string

func TestMain(m *testing.M) { testkit.Main(m, ".", func(b string) { bin = b }) }

// long skips a test unless the long tests run (IPCFUZZ_LONG=1, as .ci/run
// sets): an end-to-end run of tens of seconds, a budgeted search or shard,
// a shrink against the kernel.
func long(t *testing.T) {
	t.Helper()
	testkit.Long(t)
}

// testBuilds are the programs the tests build (plugins, mutants), once per
// test process, beside bin.
var testBuilds sync.Map // package path -> *testBuild

type testBuild struct {
	once sync.Once
	path string
	err  error
}

// testProgram builds the main package pkg (a path relative to this
// directory) once per test process and returns the executable.
func testProgram(t *testing.T, pkg string) string {
	t.Helper()
	v, _ := testBuilds.LoadOrStore(pkg, &testBuild{})
	b := v.(*testBuild)
	b.once.Do(func() { b.path, b.err = testkit.Build(filepath.Dir(bin), filepath.Base(pkg), pkg) })
	require.NoError(t, b.err)
	return b.path
}

type outcome struct {
	code           int
	stdout, stderr string
}

func ipcfuzz(t *testing.T, args ...string) outcome {
	t.Helper()
	return ipcfuzzEnv(t, nil, args...)
}

// ipcfuzzEnv runs ipcfuzz with env added to the environment (its plugins
// inherit it); a run gets 5 minutes.
func ipcfuzzEnv(t *testing.T, env []string, args ...string) outcome {
	t.Helper()
	r := testkit.Run(t, 5*time.Minute, env, bin, args...)
	return outcome{r.Code, r.Stdout, r.Stderr}
}

func summary(t *testing.T, r outcome) map[string]any {
	t.Helper()
	return testkit.Summary(t, testkit.Outcome{Code: r.code, Stdout: r.stdout, Stderr: r.stderr})
}

// refused runs ipcfuzz with args and requires that it refused them: exit
// 2, and one line on stderr that contains want. It returns the outcome.
func refused(t *testing.T, want string, args ...string) outcome {
	t.Helper()
	r := ipcfuzz(t, args...)
	require.Equal(t, 2, r.code, "%v: %s", args, r.stdout+r.stderr)
	require.Contains(t, r.stderr, want, "%v", args)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %q", args, r.stderr)
	return r
}

// refusal is a command line's arguments and what its refusal says.
type refusal struct {
	args []string
	want string
}

// refusedAll requires that each case's command line, prefix then the
// case's args, is refused (see refused) without a panic.
func refusedAll(t *testing.T, prefix []string, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		r := refused(t, c.want, append(append([]string(nil), prefix...), c.args...)...)
		require.NotContains(t, r.stderr, "panic", "%v", c.args)
	}
}

// writeFile writes text to dir/name (mode 0644) and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// compareFinds runs ipcfuzz compare with args, --json and --corpus dir,
// requires that it found something (exit 1), and returns its outcome and
// its summary.
func compareFinds(t *testing.T, dir string, args ...string) (outcome, map[string]any) {
	t.Helper()
	r := ipcfuzz(t, append(append([]string{"compare"}, args...), "--json", "--corpus", dir)...)
	require.Equal(t, 1, r.code, r.stderr)
	return r, summary(t, r)
}

// findsOne compares the plugin program against optimized with args
// (compareFinds, into a corpus directory of its own), requires one
// divergence, and returns its finding file's path and text.
func findsOne(t *testing.T, program string, args ...string) (string, string) {
	t.Helper()
	_, s := compareFinds(t, t.TempDir(), append([]string{program, "optimized"}, args...)...)
	require.EqualValues(t, 1, s["divergences"])
	path := s["scripts"].([]any)[0].(string)
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, string(text)
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer = testkit.SyncBuffer

// waitRunning waits until a compare whose stderr is errb has opened all its
// plugins and started comparing: it says "ipcfuzz: ipcfuzz compare ... (N
// jobs)" then. (Waiting for a plugin process to appear and sleeping is not
// enough on a loaded machine: the other plugins may still be starting.)
func waitRunning(t *testing.T, errb *syncBuffer) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "ipcfuzz: ipcfuzz compare ") },
		time.Minute, 20*time.Millisecond, "the run never started: %s", errb)
}

func needKernel(t *testing.T) {
	t.Helper()
	m, err := kernel.New()
	if err != nil {
		t.Skipf("the kernel side needs a private IPC namespace: %v", err)
	}
	m.Close()
}

func TestCompareNaiveOptimizedIsDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r1 := ipcfuzz(t, "compare", "naive", "optimized", "--checks", "150", "--seed", "7", "--json", "--corpus", dir)
	require.Equal(t, 0, r1.code, r1.stderr)
	s1 := summary(t, r1)
	require.EqualValues(t, 150, s1["checks"])
	require.EqualValues(t, 0, s1["divergences"])
	r2 := ipcfuzz(t, "compare", "naive", "optimized", "--checks", "150", "--seed", "7", "--json", "--corpus", dir)
	s2 := summary(t, r2)
	for _, k := range []string{"seconds", "ops_per_sec"} {
		delete(s1, k)
		delete(s2, k)
	}
	require.Equal(t, s1, s2)
}

func TestCompareLegacyAgainstKernel(t *testing.T) {
	long(t)
	t.Parallel()
	needKernel(t)
	dir := t.TempDir()
	r, s := compareFinds(t, dir, "naive:alloc=legacy", "kernel", "--checks", "500", "--seed", "1")
	require.EqualValues(t, 1, s["divergences"])
	scripts := s["scripts"].([]any)
	require.Len(t, scripts, 1)
	sc, err := corpus.Read(scripts[0].(string))
	require.NoError(t, err)
	require.LessOrEqual(t, len(sc.Steps), 4)
	require.Contains(t, r.stderr, "B: kernel")

	r = ipcfuzz(t, "compare", "naive:alloc=legacy", "kernel", "--checks", "300", "--seed", "1", "--equiv", "ids-renamed", "--json", "--corpus", dir)
	require.Equal(t, 0, r.code, r.stderr)
	require.EqualValues(t, 0, summary(t, r)["divergences"])
}

// A third-party plugin binary with a wrong allocator: compare must find the
// bug and shrink the script.
func TestExternalMutantPluginIsFoundAndShrunk(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	mutant := testProgram(t, "../../plugins/example/noseqbump")
	path, text := findsOne(t, mutant, "--checks", "500", "--seed", "3")
	require.Regexp(t, `shrunk from \d+ to \d+ ops`, text)
	sc, err := corpus.Read(path)
	require.NoError(t, err)
	require.Less(t, len(sc.Steps), 200)
	// The stored script still shows the bug on replay, and agrees on correct pairs.
	r := ipcfuzz(t, "replay", path, "--impls", mutant+",optimized")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	r = ipcfuzz(t, "replay", path, "--impls", "naive,optimized")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// corpusFiles returns the files of the checkout's corpus that pattern
// (relative to this directory) matches; there must be some.
func corpusFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, files, pattern)
	return files
}

func TestReplayCorpusOnKernel(t *testing.T) {
	t.Parallel()
	needKernel(t)
	files := corpusFiles(t, "../../corpus/ids/*.ops")
	r := ipcfuzz(t, append([]string{"replay", "--impls", "optimized,kernel"}, files...)...)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "scripts agree")
}

// The LTP corpus passes replay, as the README says, on both models
// against the kernel: every result it states is the kernel's.
func TestReplayLTPCorpus(t *testing.T) {
	t.Parallel()
	needKernel(t)
	files := corpusFiles(t, "../../corpus/ltp/*.ops")
	for _, impls := range []string{"optimized,kernel", "naive,kernel"} {
		r := ipcfuzz(t, append([]string{"replay", "--impls", impls}, files...)...)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, fmt.Sprintf("%d scripts agree", len(files)))
	}
}

// Bad input gets one clear line naming the file, line or plugin, and exit 2.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.ops", "subsystem ids\nget msg key=0x0 mode=0600\nfrobnicate msg h1\n")
	notPlugin := filepath.Join(dir, "notplugin.sh")
	require.NoError(t, os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\nsleep 1\n"), 0o755))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", bad, "--impls", "naive,optimized"}, "bad.ops:3: unknown operation"},
		{[]string{"compare", "naive", "nosuch"}, `no built-in implementation "nosuch"`},
		{[]string{"compare", "naive", "optimized", "--subsystem", "frob"}, `unknown subsystem "frob"`},
		{[]string{"compare", "naive:alloc=sideways", "optimized", "--checks", "1"}, "alloc=sideways"},
		{[]string{"compare", notPlugin, "optimized", "--checks", "1"}, "notplugin.sh"},
		{[]string{"compare", "naive"}, "two implementations"},
		{[]string{"replay", filepath.Join(dir, "missing.ops")}, "missing.ops"},
	}
	for _, c := range cases {
		r := ipcfuzz(t, c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		line := strings.TrimSpace(r.stderr)
		lines := strings.Split(line, "\n")
		last := lines[len(lines)-1]
		require.Contains(t, last, c.want, "%v", c.args)
		require.NotContains(t, r.stderr, "panic", "%v", c.args)
		require.NotContains(t, r.stderr, "goroutine ", "%v", c.args)
	}
}

// replay refuses what is not a strict script in one short line, exit 2,
// before any plugin starts. The line names the file as it was given (a
// path as long as the user's), and what it adds to that stays short: a
// huge line or token is not echoed.
func TestReplayRefusesLooseScripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	huge := strings.Repeat("x", 10<<20)
	for _, c := range []struct{ file, want string }{
		{write("empty-arrow.ops", "subsystem ids\nh1 = get msg key=0x0 mode=0600 ->\n"), "empty-arrow.ops:2: expected result: empty result"},
		{write("no-subsystem.ops", "h1 = get msg key=0x0 mode=0600\n"), "no-subsystem.ops:1: the first line must be 'subsystem NAME'"},
		{write("unbound.ops", "subsystem ids\nrmid msg h7\n"), "unbound.ops:2: handle h7 is used before any line binds it"},
		{write("huge.ops", "subsystem ids\nget msg key=0x0 mode=0600 "+huge+"\n"), "huge.ops:2: line longer than 65536 bytes"},
		{write("huge-token.ops", "subsystem ids\nget msg key=0x0 mode=0600 "+huge[:60000]+"\n"), "huge-token.ops:2: unexpected argument"},
	} {
		r := refused(t, c.want, "replay", c.file, "--impls", "naive,kernel")
		require.Contains(t, r.stderr, c.file+":", "the line names the file as given")
		require.Less(t, len(r.stderr)-len(c.file), 200, "beyond the file's name: %s", r.stderr)
	}
}

// A crashing plugin is summarised in one line (its panic message, or the
// signal), its whole stderr is saved beside the corpus file, and only a
// few of its lines reach the terminal.
func TestCrashIsSummarisedInOneLine(t *testing.T) {
	t.Parallel()
	crashy := testProgram(t, "./testdata/crashy")
	for _, how := range []string{"panic", "segv"} {
		t.Run(how, func(t *testing.T) {
			long(t) // each crash restarts a plugin: seconds; TestKilledOnceIsInfrastructure keeps a dying plugin in the fast suite
			t.Parallel()
			dir := t.TempDir()
			r := ipcfuzzEnv(t, []string{"IPCFUZZ_CRASH=" + how}, "compare", crashy, "optimized", "--checks", "300", "--seed", "1", "--json", "--corpus", dir)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.NotZero(t, s["plugin_failures"])
			path := s["scripts"].([]any)[0].(string)
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			want := map[string]string{"panic": `stderr: "panic: crashy: the listing of sem is broken (panic)"`, "segv": `stderr: "SIGSEGV: segmentation violation"`}[how]
			require.Contains(t, string(text), want)
			require.Contains(t, string(text), "reproduces on its own")
			dump, err := os.ReadFile(path + ".stderr")
			require.NoError(t, err)
			require.Contains(t, string(dump), "goroutine ", "the whole dump is kept")
			sc, err := corpus.Read(path)
			require.NoError(t, err)
			require.Less(t, strings.Count(r.stderr, "\n")-len(sc.Steps), 60, "a dump reached the terminal (besides the script):\n%s", r.stderr)
			require.NotContains(t, r.stderr, "goroutine ")
		})
	}
}

// SIGINT or SIGTERM stops a run cleanly: a summary of what was compared,
// exit status 130 when nothing was found, and no plugin left behind.
func TestInterruptStopsCleanly(t *testing.T) {
	t.Parallel()
	long(t) // two compares run and interrupted: seconds each
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(bin, "compare", "naive", "optimized", "--time", "1m", "--seed", "1", "--jobs", "1", "--json", "--corpus", t.TempDir())
		var out bytes.Buffer
		var errb syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Start())
		waitRunning(t, &errb)
		// Signalled once a check is done (the progress line says so): on
		// a loaded machine the first batch can take seconds.
		checked := regexp.MustCompile(`ipcfuzz: [1-9][0-9]* checks, `)
		require.Eventually(t, func() bool { return checked.MatchString(errb.String()) },
			time.Minute, 20*time.Millisecond, "no check was done: %s", &errb)
		require.NoError(t, cmd.Process.Signal(sig))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, errb.String())
		require.Equal(t, 130, ee.ExitCode(), errb.String())
		s := summary(t, outcome{stdout: out.String()})
		require.Equal(t, true, s["interrupted"])
		require.NotZero(t, s["checks"], "%s\n%s", out.String(), errb.String())
		require.Contains(t, errb.String(), "interrupted after")
		require.NotContains(t, errb.String(), "context canceled")
		require.Zero(t, childServing(cmd.Process.Pid, "optimized"))
	}
}

// kill -9 of the kernel plugin in the middle of a run is an infrastructure
// event: its scripts do not fail again on a fresh plugin, so it gets its own
// exit status and one line, and no finding file; the run goes on with a
// fresh plugin and nothing leaks.
func TestKillKernelPluginMidRun(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"ids", "msg"} {
		t.Run(sub, func(t *testing.T) {
			if sub == "ids" {
				long(t) // msg, with its sleeping tasks, is the harder case
			}
			t.Parallel()
			killKernelPluginMidRun(t, sub)
		})
	}
}

// killKernelPluginMidRun kills the kernel plugin during a run of one
// subsystem; with msg its task processes are asleep in msgrcv and msgsnd
// most of the time, and must die with it.
func killKernelPluginMidRun(t *testing.T, subsystem string) {
	needKernel(t)
	dir := t.TempDir()
	// Killed 1s into a 3s run (the budget starts once the plugins serve,
	// and so does the second): the run has 2s to go on with a fresh plugin.
	cmd := exec.Command(bin, "compare", "optimized", "kernel", "--subsystem", subsystem, "--time", "3s", "--seed", "1", "--json", "--corpus", dir)
	var out bytes.Buffer
	var errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	waitRunning(t, &errb)
	victim := childServing(cmd.Process.Pid, "kernel")
	require.NotZero(t, victim, "no kernel plugin")
	time.Sleep(time.Second)
	tasks := taskProcs(victim)
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("compare hung after its plugin was killed")
	}
	require.Equal(t, cli.ExitInfra, cmd.ProcessState.ExitCode(), errb.String())
	s := summary(t, outcome{stdout: out.String()})
	require.EqualValues(t, 0, s["plugin_failures"], errb.String())
	require.EqualValues(t, 1, s["infrastructure"], errb.String())
	require.EqualValues(t, 0, s["divergences"])
	require.Empty(t, s["scripts"])
	files, err := corpus.Files(dir)
	require.NoError(t, err)
	require.Empty(t, files, "a kill from outside left a finding file")
	require.Equal(t, 1, strings.Count(errb.String(), "infrastructure event: "), errb.String())
	require.Contains(t, errb.String(), "kernel")
	require.NotContains(t, errb.String(), "panic")
	require.Zero(t, childServing(cmd.Process.Pid, "kernel"), "a plugin process outlived the run")
	require.Error(t, syscall.Kill(victim, 0), "the killed plugin is still there")
	require.Eventually(t, func() bool {
		for _, p := range tasks {
			if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat")); err == nil && !bytes.Contains(stat, []byte(") Z")) {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "task processes %v of the killed plugin are still alive", tasks)
}

// taskProcs lists the task processes (ipcfuzz-task-tN) a kernel plugin runs.
func taskProcs(plugin int) []int {
	var out []int
	for _, p := range testkit.Children(plugin) {
		if strings.HasPrefix(testkit.Cmdline(p.PID), "ipcfuzz-task-") {
			out = append(out, p.PID)
		}
	}
	return out
}

// childServing returns the pid of a child of parent running "plugin serve name", or 0.
func childServing(parent int, name string) int {
	for _, p := range testkit.Children(parent) {
		if p.State != "Z" && strings.Contains(testkit.Cmdline(p.PID), "serve\x00"+name) {
			return p.PID
		}
	}
	return 0
}

// A host killed with SIGKILL cannot stop its plugins: they notice and exit,
// and the kernel plugins' task processes and namespaces go with them, with
// --jobs 4 too. Nor can it remove their socket directories: the next host
// run does.
func TestPluginsDieWithKilledHost(t *testing.T) {
	t.Parallel()
	needKernel(t)
	for _, sub := range []string{"msg", "sem", "shm"} {
		t.Run(sub, func(t *testing.T) {
			if sub != "msg" {
				long(t) // msg's sleeping tasks are the harder case
			}
			t.Parallel()
			// The hosts' TMPDIR, for their plugins' socket directories. Not
			// t.TempDir(): with the test's name in it, the sockets' paths
			// would pass the 107 bytes a socket's path has.
			tmp, err := os.MkdirTemp("", "ipcfuzz-tmp-") // not testkit's prefix, which its sweep of dead test processes' dirs takes
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(tmp) })
			env := append(os.Environ(), "TMPDIR="+tmp)
			cmd := exec.Command(bin, "compare", "optimized", "kernel", "--subsystem", sub, "--jobs", "4", "--time", "60s", "--seed", "1", "--corpus", t.TempDir())
			cmd.Env = env
			var errb syncBuffer
			cmd.Stderr = &errb
			require.NoError(t, cmd.Start())
			waitRunning(t, &errb) // its 4 pairs of plugins serve
			require.NotZero(t, childServing(cmd.Process.Pid, "kernel"))
			require.NotZero(t, childServing(cmd.Process.Pid, "optimized"))
			time.Sleep(time.Second) // tasks started, scripts under way
			family := descendants(cmd.Process.Pid, map[int]string{})
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			gone := func(pid int) bool {
				stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
				return err != nil || bytes.Contains(stat, []byte(") Z"))
			}
			require.Eventually(t, func() bool {
				for pid := range family {
					if !gone(pid) {
						return false
					}
				}
				return true
			}, 15*time.Second, 50*time.Millisecond, "of %d processes under the killed host, some outlived it", len(family))
			t.Logf("%d plugin and task processes ended with their host", len(family))

			stale, err := filepath.Glob(filepath.Join(tmp, "ipcfuzz-plugin-*"))
			require.NoError(t, err)
			require.Len(t, stale, 8, "the killed host's 4 pairs of plugins should have left their socket directories")
			next := exec.Command(bin, "compare", "naive", "optimized", "--checks", "1", "--corpus", t.TempDir())
			next.Env = env
			out, err := next.CombinedOutput()
			require.NoError(t, err, "%s", out)
			left, err := filepath.Glob(filepath.Join(tmp, "ipcfuzz-plugin-*"))
			require.NoError(t, err)
			require.Empty(t, left, "the next host left the killed host's socket directories")
		})
	}
}
