package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envTestImage names the kernel image the kernel:image= tests boot (.ci/run
// fetches Debian's 6.1 image package and sets it).
const envTestImage = "IPCFUZZ_TEST_IMAGE"

// testImage is the image to boot, or the test skips, saying why.
func testImage(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("kernel:image= needs QEMU (apt-get install qemu-system-x86): qemu-system-x86_64 is not on PATH")
	}
	img := os.Getenv(envTestImage)
	if img == "" {
		t.Skipf("no kernel image to boot: %s names one (a vmlinux, a bzImage or a Debian kernel .deb; .ci/run fetches Debian's 6.1)", envTestImage)
	}
	if _, err := os.Stat(img); err != nil {
		t.Fatalf("%s: %v", envTestImage, err)
	}
	return img
}

// The kernel side in a guest booted from Debian's 6.1: the models (written
// against 6.18) agree with it on ids, shm, msg and sem. One guest per
// subsystem, one after the other (each takes a core under TCG).
func TestCompareOptimizedWithKernelImage(t *testing.T) {
	img := testImage(t)
	for _, sub := range []string{"ids", "shm", "msg", "sem"} {
		t.Run(sub, func(t *testing.T) {
			r := ipcfuzz(t, "compare", "optimized", "kernel:image="+img, "--subsystem", sub, "--checks", "300", "--seed", "1", "--json", "--corpus", t.TempDir())
			require.Equal(t, 0, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 300, s["checks"])
			require.EqualValues(t, 0, s["divergences"])
			t.Logf("%s: %v ops/s in the guest", sub, s["ops_per_sec"])
		})
	}
}

// A host killed with SIGKILL while its guest runs scripts leaves no QEMU,
// no socket and no temporary file: QEMU has a parent-death signal, its
// socket is abstract, its initramfs a memfd.
func TestVMDiesWithKilledHost(t *testing.T) {
	img := testImage(t)
	tmp, err := os.MkdirTemp("", "ipcfuzz-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd := exec.Command(bin, "compare", "optimized", "kernel:image="+img, "--in-process", "--subsystem", "ids", "--time", "10m", "--seed", "1", "--corpus", t.TempDir())
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var errb syncBuffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitRunning(t, &errb) // the guest serves
	host := cmd.Process.Pid
	qemu := childNamed(host, "qemu-system-x86")
	require.NotZero(t, qemu, "no QEMU under the host")
	sock := fmt.Sprintf("@ipcfuzz-vm-%d-", host)
	require.True(t, unixSocketListed(sock), "no socket %s* in /proc/net/unix", sock)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(qemu), "stat"))
		return err != nil || bytes.Contains(stat, []byte(") Z"))
	}, 30*time.Second, 50*time.Millisecond, "QEMU (pid %d) outlived its host", qemu)
	require.Eventually(t, func() bool { return !unixSocketListed(sock) }, 30*time.Second, 50*time.Millisecond, "the socket outlived QEMU")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "the killed host left files in its TMPDIR")
}

// childNamed is the pid of a child of parent whose comm starts with name,
// or 0.
func childNamed(parent int, name string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(string(stat[close+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(parent) && strings.HasPrefix(string(stat[open+1:close]), name) {
			return pid
		}
	}
	return 0
}

// unixSocketListed reports whether /proc/net/unix lists a socket whose
// path starts with prefix ("@" for the abstract namespace).
func unixSocketListed(prefix string) bool {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) >= 8 && strings.HasPrefix(fs[7], prefix) {
			return true
		}
	}
	return false
}
