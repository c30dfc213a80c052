package vmimage_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// repro --run builds a script's reproducer, boots the image with it as the
// guest's only work and exits as the program did: 0 where every stated
// result is the guest kernel's, 1 where one differs (its line printed), so
// that `git bisect run` can use it.
func TestReproRunInGuest(t *testing.T) {
	img := testImage(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name, result string
		code         int
	}{
		{"agrees", "ok", 0},
		{"differs", "EAGAIN", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := filepath.Join(dir, c.name+".ops")
			text := "subsystem msg\nh1 = get msg key=0x0 mode=0600 -> id=0\nmsgsnd msg h1 type=1 size=16 fill=0 nowait -> " + c.result + "\n"
			require.NoError(t, os.WriteFile(script, []byte(text), 0o644))
			r := ipcfuzz(t, "repro", script, "--run", "kernel:image="+img)
			require.Equal(t, c.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			if c.code == 1 {
				require.Contains(t, r.stdout, "step 2: msgsnd msg h1 type=1 size=16 fill=0 nowait: kernel -> ok, expected EAGAIN")
			}
		})
	}
}

// A kernel to build that is no kernel, or an image that is empty, is
// refused in one line, exit 2, before anything boots or builds.
func TestKernelSourceAndImageRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, side := range []string{"kernel:source=" + t.TempDir(), "kernel:source=/nonexistent/linux", "kernel:image=" + empty, "kernel:image=/nonexistent/vmlinux", "kernel:image=" + empty + ",patches=" + t.TempDir()} {
		r := ipcfuzz(t, "compare", "optimized", side, "--checks", "1", "--corpus", t.TempDir())
		require.Equal(t, 2, r.code, "%s: %s", side, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		require.Len(t, lines, 1, "%s: %s", side, r.stderr)
		require.Contains(t, lines[0], "kernel:", side)
	}
}

// envTestSource names a kernel source tree (clean of an in-tree build)
// and envTestSourcePatches a series for it that plants a bug (a directory
// of ci/kernels/), for TestCompareSourceAgainstPatchedSource.
const (
	envTestSource        = "IPCFUZZ_TEST_SOURCE"
	envTestSourcePatches = "IPCFUZZ_TEST_SOURCE_PATCHES"
)

// A developer's tree against the same tree with a series: kernel:source=
// builds both (out of tree, the series in a copy) and boots them, and the
// bug the series plants is found.
func TestCompareSourceAgainstPatchedSource(t *testing.T) {
	if _, err := os.Stat("/usr/bin/qemu-system-x86_64"); err != nil {
		t.Skip("kernel:source= boots what it builds: it needs QEMU (apt-get install qemu-system-x86)")
	}
	tree, series := os.Getenv(envTestSource), os.Getenv(envTestSourcePatches)
	if tree == "" || series == "" {
		t.Skipf("no kernel tree to build: %s names one (e.g. Debian's linux-source-6.12 unpacked) and %s a series of ci/kernels/ for it (minutes of build: not in .ci/run)", envTestSource, envTestSourcePatches)
	}
	sub, err := os.ReadFile(filepath.Join(series, "subsystem"))
	require.NoError(t, err, "the series names its subsystem")
	r := ipcfuzz(t, "compare", "kernel:source="+tree, "kernel:source="+tree+",patches="+series, "--subsystem", strings.TrimSpace(string(sub)),
		"--time", "8m", "--seed", "1", "--json", "--corpus", t.TempDir())
	require.Equal(t, 1, r.code, r.stderr)
	s := summary(t, r)
	require.NotEmpty(t, s["findings"])
}

// A guest stopped with SIGSTOP while the compare runs scripts on it is
// given up after a few seconds stopped (not the call timeout, minutes
// under TCG), killed, and replaced by a fresh guest on which the batch
// runs again; nothing fails again there, so the run reports an
// infrastructure event (exit 3), not a finding.
func TestStoppedGuestIsReplaced(t *testing.T) {
	img := testImage(t)
	cmd := exec.Command(bin, "compare", "optimized", "kernel:image="+img, "--in-process", "--subsystem", "msg", "--time", "60s", "--seed", "1", "--json", "--corpus", t.TempDir())
	var errb, outb syncBuffer
	cmd.Stderr, cmd.Stdout = &errb, &outb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitRunning(t, &errb)
	qemu := childNamed(cmd.Process.Pid, "qemu-system-x86")
	require.NotZero(t, qemu, "no QEMU under the host")
	require.NoError(t, syscall.Kill(qemu, syscall.SIGSTOP))
	stopped := time.Now()
	t.Cleanup(func() { _ = syscall.Kill(qemu, syscall.SIGKILL) })
	// How long until a fresh guest replaces it: logged, not asserted
	// (the machine is shared); the run's own end bounds the test.
	require.Eventually(t, func() bool {
		q := childNamed(cmd.Process.Pid, "qemu-system-x86")
		return q != 0 && q != qemu
	}, 5*time.Minute, 50*time.Millisecond, "no guest replaced the stopped one")
	t.Logf("a fresh guest started %v after the SIGSTOP", time.Since(stopped).Round(100*time.Millisecond))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr:\n%s", errb.String())
	require.Equal(t, 3, ee.ExitCode(), "stderr:\n%s", errb.String())
	require.Contains(t, errb.String(), "stayed stopped")
	r := outcome{code: ee.ExitCode(), stdout: outb.String(), stderr: errb.String()}
	s := summary(t, r)
	require.EqualValues(t, 0, s["divergences"])
	require.NotEmpty(t, s["infrastructure_events"])
}
