package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// cCompiler returns the C compiler, or skips the test saying there is none.
func cCompiler(t *testing.T) string { return testkit.CCompiler(t) }

// reproRun writes the reproducer of path expecting side, builds it with
// cc -Wall -Werror -O2 and runs it: its exit status and output.
func reproRun(t *testing.T, cc, path, side string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "repro.c")
	r := ipcfuzz(t, "repro", path, "-o", src, "--expect", side)
	require.Equal(t, 0, r.code, r.stderr)
	exe := filepath.Join(dir, "repro")
	out, err := exec.Command(cc, "-Wall", "-Werror", "-O2", "-o", exe, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "the compiler warned")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var b bytes.Buffer
	cmd := exec.CommandContext(ctx, exe)
	cmd.Stdout, cmd.Stderr = &b, &b
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), b.String()
	}
	require.NoError(t, err)
	return 0, b.String()
}

// A divergence of a test plugin (msgmutant with lifo: sleeping receivers
// served newest first) from the kernel: its reproducer with the plugin's
// results expected exits 1 on the kernel at the diverging step, and with
// the kernel's exits 0.
func TestReproOfAPluginDivergence(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	needKernel(t)
	cc := cCompiler(t)
	dir := t.TempDir()
	mutant := testProgram(t, "./testdata/msgmutant")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=lifo"}, "compare", mutant, "kernel", "--subsystem", "msg", "--checks", "1000", "--seed", "1", "--json", "--corpus", dir)
	require.Equal(t, 1, r.code, r.stderr)
	path := summary(t, r)["scripts"].([]any)[0].(string)
	f, err := report.Read(path)
	require.NoError(t, err)
	require.Positive(t, f.First, "the finding names its first diverging step")
	step := f.Steps[f.First-1]

	// The header comment says where it was found and how to build it.
	src := ipcfuzz(t, "repro", path)
	require.Equal(t, 0, src.code, src.stderr)
	var uts unix.Utsname
	require.NoError(t, unix.Uname(&uts))
	require.Contains(t, src.stdout, "kernel it was found on: "+unix.ByteSliceToString(uts.Release[:])+"\n")
	require.Regexp(t, `\n \* seed: 1 \(script \d+, script seed \d+\)\n`, src.stdout)
	require.Contains(t, src.stdout, "cc -O2 -static -o repro repro.c")

	code, out := reproRun(t, cc, path, "a")
	// Where woken tasks race, the kernel may take another allowed outcome
	// when the reproducer runs than when the finding was shrunk (the shrink
	// replays against the kernel): the step then shows another result, and
	// the kernel's own expectations may miss at a racing step.
	if raced(f.Steps) {
		require.Contains(t, []int{0, 1}, code, "the reproducer ran to its end: %s", out)
		t.Logf("the shrunk script holds woken tasks that race; the reproducer said:\n%s", out)
		return
	}
	require.Equal(t, 1, code, out)
	require.Contains(t, out, fmt.Sprintf("step %d: %s: kernel -> %s, expected %s\n", step.N, step.Op, step.B, step.A))
	code, out = reproRun(t, cc, path, "b")
	require.Equal(t, 0, code, out)
}

// raced reports whether some step of a finding completed more than one
// sleeping task, in either side's result: tasks woken together race.
func raced(steps []report.Step) bool {
	for _, st := range steps {
		if strings.Count(st.A, " ; t") > 1 || strings.Count(st.B, " ; t") > 1 {
			return true
		}
	}
	return false
}

// A corpus script with one stated result changed: the reproducer exits 1
// and names that step; as committed it exits 0.
func TestReproOfAChangedScript(t *testing.T) {
	t.Parallel()
	needKernel(t)
	cc := cCompiler(t)
	text, err := os.ReadFile("../../corpus/msg/seed-selective-wakeup.ops")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "wakeup.ops")
	require.NoError(t, os.WriteFile(path, text, 0o644))
	code, out := reproRun(t, cc, path, "a")
	require.Equal(t, 0, code, out)

	lines := strings.Split(string(text), "\n")
	n, at := 0, -1
	for i, l := range lines {
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "subsystem ") {
			continue
		}
		n++
		if strings.HasSuffix(l, "-> ok") && at < 0 && n > 3 {
			at = i
			break
		}
	}
	require.Positive(t, at, "the script states an ok past its third step")
	op, _, _ := strings.Cut(lines[at], " -> ")
	lines[at] = op + " -> EPERM"
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	code, out = reproRun(t, cc, path, "a")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, fmt.Sprintf("step %d: %s: kernel -> ok", n, op))
	require.Contains(t, out, ", expected EPERM\n")
}

func TestReproBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.ops", "subsystem ids\nget msg key=zz\n")
	r := ipcfuzz(t, "repro", bad)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "bad.ops:2")
	r = ipcfuzz(t, "repro", "../../corpus/sem/seed-spec-scenarios.ops", "--expect", "b")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "is a script, not a finding")
	r = ipcfuzz(t, "repro", "../../corpus/sem/seed-spec-scenarios.ops", "--expect", "c")
	require.Equal(t, 2, r.code)
	r = ipcfuzz(t, "report", filepath.Join(dir, "missing.ops"), "-o", filepath.Join(dir, "r.html"))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "missing.ops")
	_, err := os.Stat(filepath.Join(dir, "r.html"))
	require.True(t, os.IsNotExist(err), "no page is written for bad input")
}

// compare --report writes the page of what it found.
func TestCompareReport(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	t.Parallel()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	mutant := testProgram(t, "./testdata/msgmutant")
	r := ipcfuzzEnv(t, []string{"IPCFUZZ_MUTATION=fits"}, "compare", mutant, "optimized", "--subsystem", "msg", "--checks", "1000", "--seed", "1", "--corpus", filepath.Join(dir, "findings"), "--report", page)
	require.Equal(t, 1, r.code, r.stderr)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(b), `class="diverge first"`)
	require.Contains(t, string(b), "ipcfuzz repro ")
}
