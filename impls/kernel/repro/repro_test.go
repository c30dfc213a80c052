//go:build linux && amd64

package repro_test

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

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/repro"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// compiler returns the C compiler, or skips the test saying there is none.
func compiler(t *testing.T) string { return testkit.CCompiler(t) }

// needRoot skips a test that runs reproducers where they cannot make a
// private IPC namespace.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a reproducer needs root (unshare(CLONE_NEWIPC), the IPC sysctls)")
	}
}

// build compiles src with the flags of the acceptance (cc -Wall -Werror
// -O2, or -O0 where only the behaviour is tested: it compiles faster), every
// warning an error, into the test's temp dir.
func build(t *testing.T, cc string, src []byte, opt ...string) string {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "repro.c")
	require.NoError(t, os.WriteFile(c, src, 0o644))
	bin := filepath.Join(dir, "repro")
	level := "-O2"
	if len(opt) > 0 {
		level = opt[0]
	}
	out, err := exec.Command(cc, "-Wall", "-Werror", level, "-o", bin, c).CombinedOutput()
	require.NoError(t, err, "cc -Wall -Werror %s:\n%s", level, out)
	require.Empty(t, strings.TrimSpace(string(out)), "the compiler warned")
	return bin
}

// run runs a reproducer; its exit status and output.
func run(t *testing.T, bin string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	require.NoError(t, err, "running the reproducer")
	return 0, out.String()
}

// stated is the result each step of sc states ("" where it states none).
func stated(sc *ops.Script) []string {
	out := make([]string, len(sc.Steps))
	for i, st := range sc.Steps {
		if st.Want != nil {
			out[i] = ops.FormatResult(st.Op, *st.Want)
		}
	}
	return out
}

// changed is a result other than want.
func changed(want string) string {
	if want == "ENOSYS" {
		return "EPERM"
	}
	return "ENOSYS"
}

// Every corpus script: the reproducer compiles without a warning, exits 0
// on this kernel, and with one stated result changed exits 1 naming that
// step.
func TestCorpusReproducers(t *testing.T) {
	cc := compiler(t)
	needRoot(t)
	files, err := filepath.Glob("../../../corpus/*/*.ops")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	if !testkit.IsLong() {
		// Two builds of a static C program a script: every script takes
		// minutes on two cores.
		files = longestPerDir(t, files)
		t.Logf("the longest script of each corpus directory only; every script with %s=1 (.ci/run does)", testkit.EnvLong)
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f)) + "/" + strings.TrimSuffix(filepath.Base(f), ".ops")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			text, err := os.ReadFile(f)
			require.NoError(t, err)
			sc, err := ops.ParseString(string(text))
			require.NoError(t, err)
			expect := stated(sc)
			src, err := repro.Write(sc, repro.Options{Expect: expect})
			var un *repro.Unsupported
			if errors.As(err, &un) {
				t.Skipf("the C reproducer cannot translate this script yet: %v", err)
			}
			require.NoError(t, err)
			code, out := run(t, build(t, cc, src))
			require.Equal(t, 0, code, "the reproducer of %s on this kernel:\n%s", f, out)

			var checked []int
			for i, e := range expect {
				if e != "" {
					checked = append(checked, i)
				}
			}
			if len(checked) == 0 {
				t.Logf("%s states no result: nothing to change", f)
				return
			}
			i := checked[len(checked)/2]
			expect[i] = changed(expect[i])
			src, err = repro.Write(sc, repro.Options{Expect: expect})
			require.NoError(t, err)
			code, out = run(t, build(t, cc, src, "-O0"))
			require.Equal(t, 1, code, "with step %d's result changed:\n%s", i+1, out)
			require.Contains(t, out, fmt.Sprintf("step %d: %s: kernel -> ", i+1, ops.FormatOp(sc.Steps[i].Op)))
			require.Contains(t, out, ", expected "+expect[i]+"\n")
		})
	}
}

// longestPerDir keeps, of each directory's files, the longest (the most
// operations of its subsystem in one reproducer); the first by name on a tie.
func longestPerDir(t *testing.T, files []string) []string {
	best := map[string]string{}
	size := map[string]int64{}
	var dirs []string
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		d := filepath.Dir(f)
		if _, ok := best[d]; !ok {
			dirs = append(dirs, d)
		}
		if fi.Size() > size[d] {
			best[d], size[d] = f, fi.Size()
		}
	}
	var kept []string
	for _, d := range dirs {
		kept = append(kept, best[d])
	}
	return kept
}

// A reproducer that cannot make its private IPC namespace (run by an
// unprivileged user) exits 2, saying what failed, and runs no step.
func TestSetupFailureExitsTwo(t *testing.T) {
	cc := compiler(t)
	needRoot(t)
	sc, err := ops.ParseString("subsystem ids\nh1 = get msg key=0x0 mode=0600 -> id=0\n")
	require.NoError(t, err)
	src, err := repro.Write(sc, repro.Options{Expect: stated(sc)})
	require.NoError(t, err)
	bin := build(t, cc, src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Root without capabilities (setpriv clears the bounding set) cannot
	// unshare, and still reaches the program wherever TMPDIR is (.ci/run's
	// is a 0700 directory an unprivileged user cannot enter).
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux) to run the reproducer without capabilities")
	}
	cmd := exec.CommandContext(ctx, setpriv, "--bounding-set=-all", "--inh-caps=-all", "--", bin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 2, ee.ExitCode(), "%s", out)
	require.Contains(t, string(out), "repro: setup: unshare(CLONE_NEWIPC)")
	require.NotContains(t, string(out), "step 1:")
}

// Every operation of the vocabulary has a translation: a kind or an
// argument value added without one fails here, not in a user's hands.
func TestEveryAdviceTranslates(t *testing.T) {
	for _, a := range ops.VMAAdvices {
		sc, err := ops.ParseString(fmt.Sprintf("subsystem vma\nmap w:0+1 rw-\nadvise w:0+1 %s\n", a))
		require.NoError(t, err)
		_, err = repro.Write(sc, repro.Options{})
		require.NoError(t, err, "advice %s", a)
	}
}

// The reproducer writes every kind of the vocabulary (its table of kinds,
// ops.Handlers): a kind added without its writer fails here the day it is
// added.
func TestEveryKindHasAWriter(t *testing.T) {
	for _, s := range ops.Specs() {
		if !repro.Handles(s.Kind) {
			t.Errorf("the C reproducer has no writer for %s (subsystem %s)", s.Name, s.Subsystem)
		}
	}
}
