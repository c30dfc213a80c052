//go:build linux && amd64

package repro_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/repro"
)

// nsScripts are the scripts of testdata that move tasks between IPC
// namespaces (their results read from kernel/fork.c ksys_unshare,
// kernel/nsproxy.c commit_nsset and ipc/shm.c exit_shm).
func nsScripts(t *testing.T) map[string]*ops.Script {
	t.Helper()
	files, err := filepath.Glob("testdata/ns-*.ops")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]*ops.Script{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		sc, err := ops.ParseString(string(text))
		require.NoError(t, err, f)
		out[f] = sc
	}
	return out
}

// unshare and setns run in the task's process: a setns names the process
// whose namespace it enters at run time (the named task's, or the main
// process's for t0 and a task that has not run), and the main process never
// calls either.
func TestNamespaceStepsEmitted(t *testing.T) {
	sc, err := ops.ParseString("subsystem sem\nunshare task=t1\nsetns task=t2 ns=t1\nsetns task=t1 ns=t0\nsetns task=t3 ns=t3\n")
	require.NoError(t, err)
	src, err := repro.Write(sc, repro.Options{})
	require.NoError(t, err)
	c := string(src)
	has := func(want string) {
		t.Helper()
		require.True(t, strings.Contains(c, want), "the reproducer lacks %q", want)
	}
	for i, body := range []string{"unshare_ns(out);", "enter_ns(out);", "enter_ns(out);", "enter_ns(out);"} {
		has(fmt.Sprintf("/* step %d: %s */\nstatic void step%d(char *out)\n{\n\t%s\n}", i+1, ops.FormatOp(sc.Steps[i].Op), i+1, body))
	}
	has("\tissue(1, 1, 0, got);\n")
	for _, call := range []string{"setns_task(2, 1, 2, got);", "setns_task(1, 0, 3, got);", "setns_task(3, 3, 4, got);"} {
		has("\t" + call + "\n")
	}
	main := c[strings.Index(c, "int main(void)"):]
	require.False(t, strings.Contains(main, "unshare_ns(") || strings.Contains(main, "enter_ns("), "main calls unshare or setns itself")
	has("unshare and setns move tasks t1..t15")
}

// The namespace scripts: each reproducer compiles without a warning and
// exits 0 on this kernel; with the stated result of a setns or unshare
// step changed (a completion dropped, or EBUSY for ok), it exits 1 naming
// that step: the result and what it woke are checked.
func TestNamespaceReproducers(t *testing.T) {
	cc := compiler(t)
	needRoot(t)
	for f, sc := range nsScripts(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			expect := stated(sc)
			src, err := repro.Write(sc, repro.Options{Expect: expect})
			require.NoError(t, err)
			code, out := run(t, build(t, cc, src))
			require.Equal(t, 0, code, "the reproducer of %s on this kernel:\n%s", f, out)

			// The first unshare or setns that completes a sleeper, else
			// the last one.
			i := -1
			for j, st := range sc.Steps {
				if k := st.Op.Kind; (k == ops.KindUnshare || k == ops.KindSetns) && (i < 0 || !strings.Contains(expect[i], " ; ")) {
					i = j
				}
			}
			require.GreaterOrEqual(t, i, 0, "%s has no unshare or setns", f)
			want := strings.SplitN(expect[i], " ; ", 2)[0]
			if want == expect[i] {
				want = changed(want)
			}
			expect[i] = want
			src, err = repro.Write(sc, repro.Options{Expect: expect})
			require.NoError(t, err)
			code, out = run(t, build(t, cc, src, "-O0"))
			require.Equal(t, 1, code, "with step %d's result changed:\n%s", i+1, out)
			require.Contains(t, out, fmt.Sprintf("step %d: %s: kernel -> ", i+1, ops.FormatOp(sc.Steps[i].Op)))
			require.Contains(t, out, ", expected "+want+"\n")
		})
	}
}
