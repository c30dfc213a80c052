//go:build linux && amd64

package vma

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	model "github.com/ipcfuzz/ipcfuzz/impls/vma"
	"github.com/ipcfuzz/ipcfuzz/impls/vma/vmatest"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// hostEnv makes the test binary a host: it starts a helper, prints
// "ready <pid>" and waits to be killed.
const hostEnv = "IPCFUZZ_VMA_TEST_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(hostEnv) != "" {
		os.Exit(host())
	}
	code := m.Run()
	if left := helperChildren(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "helper processes left after the tests: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

func host() int {
	h, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Printf("skip: %v\n", err)
		return 0
	}
	fmt.Printf("ready %d\n", h.Pid())
	select {}
}

// helperChildren lists this process's children that run the helper.
func helperChildren() []int {
	var out []int
	for _, p := range testkit.Children(os.Getpid()) {
		if p.Alive() && strings.HasPrefix(p.Comm, "vmahelper") {
			out = append(out, p.PID)
		}
	}
	return out
}

// start starts a helper for a test, or skips naming what is missing.
func start(tb testing.TB, opt Options) *Helper {
	tb.Helper()
	h := started(tb, Start, opt)
	tb.Cleanup(func() { require.NoError(tb, h.Close()) })
	return h
}

// started calls startFn (Start or StartRestarting) for a test and returns
// what it started, or skips naming what is missing: root, or a C compiler.
func started[T any](tb testing.TB, startFn func(context.Context, Options) (T, error), opt Options) T {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: the models assume root's limits (mlock beyond RLIMIT_MEMLOCK)")
	}
	h, err := startFn(context.Background(), opt)
	if errors.Is(err, ErrNoCompiler) {
		tb.Skipf("needs a C compiler: %v", err)
	}
	require.NoError(tb, err)
	return h
}

func TestHelloAndQuirks(t *testing.T) {
	h := start(t, Options{})
	t.Logf("kernel %s, quirks %s", h.Release(), h.Quirks())
	require.NotEmpty(t, h.Release())
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, "brk=0\n", ops.FormatVMAState(st), "the window and the heap start empty")
}

// The worked cases of vma-spec, checked on this kernel (they are the
// expectations of a kernel with ops.VMAQuirksLinux618's rules).
func TestSpecCasesOnKernel(t *testing.T) {
	h := start(t, Options{})
	if h.Quirks()&^ops.QuirkForkChildRemap != ops.VMAQuirksLinux618&^ops.QuirkForkChildRemap {
		t.Skipf("this kernel (%s, %s) has other rules than the cases assume", h.Release(), h.Quirks())
	}
	for _, c := range vmatest.SpecCases() {
		steps, err := vmatest.Run(h, c.Calls)
		require.NoError(t, err, c.Name)
		require.Equal(t, c.Want, ops.FormatVMAState(steps[len(steps)-1].State), c.Name)
	}
	for _, c := range vmatest.SpecErrorCases() {
		steps, err := vmatest.Run(h, c.Calls)
		require.NoError(t, err, c.Name)
		var errs []ops.Errno
		for _, s := range steps {
			errs = append(errs, s.Errno)
		}
		require.Equal(t, c.Errs, errs, c.Name)
	}
}

// The model, told the quirks the helper found, agrees with the kernel on
// random scripts: every errno and every state after each call. A failure
// is shrunk to a minimal script.
func TestModelAgreesWithKernel(t *testing.T) {
	h := start(t, Options{})
	for _, c := range []struct {
		name string
		mk   func(ops.VMAQuirks) *model.Space
	}{{"naive", model.NewNaive}, {"optimized", model.NewOptimized}} {
		t.Run(c.name, func(t *testing.T) {
			m := c.mk(h.Quirks())
			diff := func(calls []vmatest.Call) (string, error) {
				want, err := vmatest.Run(h, calls)
				if err != nil {
					return "", err
				}
				got, err := vmatest.Run(m, calls)
				if err != nil {
					return "", err
				}
				return vmatest.Diff(calls, want, got, "kernel", "model"), nil
			}
			rapid.Check(t, func(t *rapid.T) {
				calls := vmatest.Script(30).Draw(t, "script")
				d, err := diff(calls)
				if err != nil {
					t.Fatal(err)
				}
				if d == "" {
					return
				}
				small := vmatest.Minimize(calls, func(c []vmatest.Call) bool {
					d, err := diff(c)
					return err == nil && d != ""
				})
				d, _ = diff(small)
				t.Fatal(d)
			})
		})
	}
}

// readMaps returns the helper's /proc/PID/maps.
func readMaps(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	return string(b)
}

// A thousand scripts leave the helper's mappings as they found them: after
// each reset the window and the heap area are empty and the break is back,
// and nothing outside them ever changed.
func TestResetIsExact(t *testing.T) {
	h := start(t, Options{})
	before := readMaps(t, h.Pid())
	for i := range 1000 {
		calls := vmatest.Generate(uint64(i), 40)
		_, err := vmatest.Run(h, calls)
		require.NoError(t, err, "script %d:\n%s", i, vmatest.FormatCalls(calls))
		require.NoError(t, h.Reset())
		st, err := h.State()
		require.NoError(t, err)
		require.Equal(t, "brk=0\n", ops.FormatVMAState(st), "after script %d:\n%s", i, vmatest.FormatCalls(calls))
	}
	require.Equal(t, before, readMaps(t, h.Pid()))
}

// The helper refuses to run, in one line, when the window is taken: here
// by the helper's own text, which a static executable has at 0x400000.
func TestRefusesTakenWindow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	_, err := Start(context.Background(), Options{WindowBase: 0x400000})
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("needs a C compiler: %v", err)
	}
	require.Error(t, err)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), "the window is taken")
}

// Without a C compiler Build fails in one line that names what is missing.
func TestNoCompilerIsOneLine(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("CC", "")
	_, err := Build(context.Background(), Options{CacheDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNoCompiler)
	require.NotContains(t, err.Error(), "\n")
}

// Close reaps the helper; a cancelled context kills it.
func TestNoHelperLeftAfterCloseOrCancel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	h := start(t, Options{})
	pid := h.Pid()
	require.NoError(t, h.Close())
	require.False(t, testkit.Running(pid), "helper %d outlived Close", pid)

	ctx, cancel := context.WithCancel(context.Background())
	h2, err := Start(ctx, Options{})
	require.NoError(t, err)
	cancel()
	<-h2.exited
	_, err = h2.State()
	require.Error(t, err)
	require.NoError(t, h2.Close())
}

// The helper dies with the process that drives it, even killed with
// SIGKILL (its parent-death signal).
func TestNoHelperLeftWhenHostKilled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	if strings.HasPrefix(line, "skip:") {
		_ = cmd.Wait()
		t.Skip(strings.TrimSpace(line))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	require.NoError(t, err, line)
	require.True(t, testkit.Running(pid))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	// The kernel delivers the signal as the host's threads exit; wait for
	// it, with a generous bound only a helper that never dies reaches.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if !testkit.Running(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper %d outlived its killed host", pid)
		}
	}
}

func TestMeasureBrkExpand(t *testing.T) {
	h := start(t, Options{})
	m, err := h.MeasureBrkExpand(100, 3)
	require.NoError(t, err)
	require.Len(t, m.WallNs, 3)
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, "brk=0\n", ops.FormatVMAState(st), "the workload cleans up after itself")
}

// BenchmarkBrkExpandKernel reports the kernel's cost of one brk of the
// brk-expand workload (ns/brk) with n VMAs in the address space.
func BenchmarkBrkExpandKernel(b *testing.B) {
	h := start(b, Options{})
	for _, n := range []int{10, 1000, 30000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var ns int64
			for i := 0; i < b.N; i++ {
				m, err := h.MeasureBrkExpand(n, 1)
				if err != nil {
					b.Fatal(err)
				}
				ns += m.WallNs[0]
			}
			b.ReportMetric(float64(ns)/float64(b.N)/float64(ops.BrkExpandCalls), "ns/brk")
		})
	}
}

// BenchmarkReset is the cost of returning the helper to its initial state
// after a typical script (reported per reset).
func BenchmarkReset(b *testing.B) {
	h := start(b, Options{})
	calls := vmatest.Generate(7, 40)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, c := range calls {
			if _, err := vmatest.Apply(h, c); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := h.Reset(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkState is the cost of one snapshot (smaps read and parsed).
func BenchmarkState(b *testing.B) {
	h := start(b, Options{})
	for _, c := range vmatest.Generate(7, 40) {
		if _, err := vmatest.Apply(h, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.State(); err != nil {
			b.Fatal(err)
		}
	}
}

// Scripts aimed at rare rules: the models agree with the kernel on them.
func TestDirectedScripts(t *testing.T) {
	h := start(t, Options{})
	for _, c := range vmatest.Directed() {
		want, err := vmatest.Run(h, c.Calls)
		require.NoError(t, err, c.Name)
		for _, m := range []*model.Space{model.NewNaive(h.Quirks()), model.NewOptimized(h.Quirks())} {
			got, err := vmatest.Run(m, c.Calls)
			require.NoError(t, err, c.Name)
			if d := vmatest.Diff(c.Calls, want, got, "kernel", "model"); d != "" {
				t.Errorf("%s:\n%s", c.Name, d)
			}
		}
	}
}

// BenchmarkStart is the cost of a fresh helper (start, probes, hello,
// close): the alternative to Reset that was not needed.
func BenchmarkStart(b *testing.B) {
	start(b, Options{}) // builds the helper once, skips where it cannot run
	for i := 0; i < b.N; i++ {
		h, err := Start(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// The helper shares the process group of its driver, so a signal to the
// whole group (Ctrl-C, timeout -s INT around a fuzz run) reaches it too: it
// must keep serving, and end only with its driver.
func TestHelperOutlivesJobControlSignals(t *testing.T) {
	h := start(t, Options{})
	ign := testkit.SigIgn(t, h.Pid())
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGTERM} {
		require.NotZero(t, ign&(1<<(sig-1)), "the helper does not ignore %v", sig)
		require.NoError(t, syscall.Kill(h.Pid(), sig))
	}
	calls := vmatest.Generate(1, 20)
	_, err := vmatest.Run(h, calls)
	require.NoError(t, err)
	require.NoError(t, h.Reset())
}

// A sealed VMA cannot be unmapped: the reset says ErrSealed, and
// Restarting replaces the helper, whose window and heap area are empty
// again; a script with nothing sealed keeps the helper.
func TestRestartingReplacesASealedHelper(t *testing.T) {
	r := started(t, StartRestarting, Options{})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	if r.Quirks()&ops.QuirkMseal == 0 {
		t.Skipf("kernel %s has no mseal", r.Release())
	}
	first := r.Pid()
	e, err := r.Map(ops.VMAArgs{Start: 2, Pages: 2, Prot: ops.ProtRead})
	require.NoError(t, err)
	require.Equal(t, ops.OK, e)
	require.NoError(t, r.Reset())
	require.Equal(t, first, r.Pid(), "nothing sealed: the same helper")

	for _, call := range []func() (ops.Errno, error){
		func() (ops.Errno, error) { return r.Map(ops.VMAArgs{Start: 2, Pages: 2, Prot: ops.ProtRead}) },
		func() (ops.Errno, error) { return r.Seal(ops.VMAArgs{Start: 3, Pages: 1}) },
		func() (ops.Errno, error) { return r.Brk(ops.VMAArgs{Break: 1}) },
		func() (ops.Errno, error) { return r.Seal(ops.VMAArgs{Heap: true, Pages: 1}) },
	} {
		e, err := call()
		require.NoError(t, err)
		require.Equal(t, ops.OK, e)
	}
	e, err = r.Unmap(ops.VMAArgs{Start: 3, Pages: 1})
	require.NoError(t, err)
	require.Equal(t, ops.EPERM, e)
	require.ErrorIs(t, r.Helper.Reset(), ErrSealed)
	requireReplaced(t, r, first)
}

// A kernel that leaks mm->locked_vm (MREMAP_DONTUNMAP of part of a locked
// VMA on 6.16 and later: the dontunmap-no-split quirk) leaves the helper
// counting locked memory with nothing mapped: the reset says ErrLockedLeft
// and Restarting replaces the helper, so the next script does not meet
// RLIMIT_MEMLOCK early. A script that locks and unlocks keeps the helper.
func TestRestartingReplacesAHelperThatLeakedLockedMemory(t *testing.T) {
	r := started(t, StartRestarting, Options{})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	first := r.Pid()
	for _, call := range []func() (ops.Errno, error){
		func() (ops.Errno, error) {
			return r.Map(ops.VMAArgs{Start: 0, Pages: 6, Prot: ops.ProtRead | ops.ProtWrite})
		},
		func() (ops.Errno, error) { return r.Lock(ops.VMAArgs{Start: 0, Pages: 6}) },
		func() (ops.Errno, error) {
			return r.Remap(ops.VMAArgs{Start: 2, Pages: 2, NewPages: 2, Fixed: true, Target: 20, DontUnmap: true})
		},
	} {
		e, err := call()
		require.NoError(t, err)
		require.Equal(t, ops.OK, e)
	}
	if r.Quirks()&ops.QuirkDontUnmapNoSplit == 0 {
		require.NoError(t, r.Reset())
		require.Equal(t, first, r.Pid(), "kernel %s splits the source and counts right: the same helper", r.Release())
		return
	}
	require.ErrorIs(t, r.Helper.Reset(), ErrLockedLeft)
	requireReplaced(t, r, first)
}

// requireReplaced requires that a reset of r replaces its helper, first
// (the pid of the one before), once, with a fresh one: an empty address
// space.
func requireReplaced(t *testing.T, r *Restarting, first int) {
	t.Helper()
	require.NoError(t, r.Reset())
	require.NotEqual(t, first, r.Pid(), "a new helper")
	require.Equal(t, 1, r.Restarts())
	st, err := r.State()
	require.NoError(t, err)
	require.Equal(t, "brk=0\n", ops.FormatVMAState(st))
}

// A reset that fails for another reason (here the helper is gone, as after
// a kernel that killed it) replaces the helper too: the side goes on.
func TestRestartingReplacesAHelperWhoseResetFails(t *testing.T) {
	r := started(t, StartRestarting, Options{})
	t.Cleanup(func() { _ = r.Close() })
	first := r.Pid()
	e, err := r.Map(ops.VMAArgs{Start: 2, Pages: 2, Prot: ops.ProtRead})
	require.NoError(t, err)
	require.Equal(t, ops.OK, e)
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	require.Eventually(t, func() bool { return r.Helper.Reset() != nil }, 10*time.Second, 10*time.Millisecond)
	requireReplaced(t, r, first)
}

// A call the helper does not answer within the call timeout fails, saying
// so, and the helper is killed (a blocked read of its answer ends with
// it); every later call fails at once, and no helper process is left.
func TestACallPastTheTimeoutKillsTheHelper(t *testing.T) {
	h, err := Start(context.Background(), Options{CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Skipf("no helper: %v", err)
	}
	defer h.Close()
	pid := h.Pid()
	// The brk-expand workload at 30000 VMAs, 1000 times: far longer than
	// 300 ms (each round maps and unmaps the 30000).
	_, err = h.MeasureBrkExpand(30000, 1000)
	require.Error(t, err)
	require.Contains(t, err.Error(), "no answer within 300ms")
	_, err = h.Map(ops.VMAArgs{Start: 0, Pages: 1, Prot: ops.ProtRead})
	require.Error(t, err)
	require.Error(t, syscall.Kill(pid, 0), "the helper is gone")
}

// Requests sent ahead (Pipeline) give the answers the same calls give one
// at a time; a reset reads and drops the answers of requests sent ahead
// that no call read; a call other than the one sent ahead breaks the
// helper rather than take another call's answer.
func TestPipelinedCallsAnswerAsCallsDo(t *testing.T) {
	h, err := Start(context.Background(), Options{})
	if err != nil {
		t.Skipf("no helper: %v", err)
	}
	defer h.Close()
	w := func(start, pages int64) ops.VMAArgs {
		return ops.VMAArgs{Start: start, Pages: pages, Prot: ops.ProtRead | ops.ProtWrite}
	}
	script := []ops.Op{
		{Kind: ops.KindMap, VMA: w(0, 4)},
		{Kind: ops.KindTouch, VMA: ops.VMAArgs{Start: 1, Write: true}},
		{Kind: ops.KindProtect, VMA: ops.VMAArgs{Start: 1, Pages: 1, Prot: ops.ProtRead}},
		{Kind: ops.KindUnmap, VMA: ops.VMAArgs{Start: 9, Pages: 0}}, // EINVAL
		{Kind: ops.KindMap, VMA: ops.VMAArgs{THP: true, Start: 0, Pages: 512, Prot: ops.ProtRead | ops.ProtWrite}},
		{Kind: ops.KindFork},
		{Kind: ops.KindLayout},
	}
	run := func(pipelined bool) []string {
		require.NoError(t, h.Reset())
		if pipelined {
			require.NoError(t, h.Pipeline(script, true))
		}
		var out []string
		for _, op := range script[:4] {
			var e ops.Errno
			switch op.Kind {
			case ops.KindMap:
				e, err = h.Map(op.VMA)
			case ops.KindTouch:
				e, err = h.Touch(op.VMA)
			case ops.KindProtect:
				e, err = h.Protect(op.VMA)
			case ops.KindUnmap:
				e, err = h.Unmap(op.VMA)
			}
			require.NoError(t, err)
			out = append(out, e.String())
		}
		e, err := h.Map(script[4].VMA)
		require.NoError(t, err)
		e2, err := h.Fork()
		require.NoError(t, err)
		st, err := h.State()
		require.NoError(t, err)
		final, err := h.State()
		require.NoError(t, err)
		return append(out, e.String(), e2.String(), ops.FormatVMAState(st), ops.FormatVMAState(final))
	}
	one := run(false)
	require.Equal(t, one, run(true))
	require.Contains(t, one[3], "EINVAL")

	// A script that ends early: the reset drops what no call read.
	require.NoError(t, h.Reset())
	require.NoError(t, h.Pipeline(script, false))
	_, err = h.Map(script[0].VMA)
	require.NoError(t, err)
	require.NoError(t, h.Reset())
	st, err := h.State()
	require.NoError(t, err)
	require.Empty(t, st.VMAs)

	// A call out of the order sent breaks the helper.
	require.NoError(t, h.Pipeline(script, false))
	_, err = h.Unmap(script[3].VMA)
	require.ErrorContains(t, err, "sent ahead")
	_, err = h.Map(script[0].VMA)
	require.Error(t, err)
}
