package host

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startHost runs the test binary as a host (runHost) and returns it with
// its plugin's socket directory and pid.
func startHost(t *testing.T, mode string) (*exec.Cmd, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hostEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the host printed no socket directory")
	var dir string
	var pid int
	_, err = fmt.Sscan(line, &dir, &pid)
	require.NoError(t, err, line)
	return cmd, dir, pid
}

// A host killed with SIGKILL cannot remove its plugins' socket
// directories: the next host removes them at its first launch, and leaves
// alone those of hosts that live, and those whose lock a process still
// holds (a host in another pid namespace, or a reused pid).
func TestStaleSocketDirsOfDeadHostsAreRemoved(t *testing.T) {
	// The hosts' TMPDIR. Not t.TempDir(): with this test's name in it, the
	// plugins' socket paths would pass the 107 bytes a socket's path has.
	tmp, err := os.MkdirTemp("", "ipcfuzz-tmp-") // not testkit's prefix, which its sweep of dead test processes' dirs takes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)

	live, liveDir, _ := startHost(t, "hold")
	dead, deadDir, deadPlugin := startHost(t, "hold")
	for d, host := range map[string]*exec.Cmd{liveDir: live, deadDir: dead} {
		require.Equal(t, tmp, filepath.Dir(d))
		require.True(t, strings.HasPrefix(filepath.Base(d), fmt.Sprintf("%s%d-", sockDirPrefix, host.Process.Pid)), "%s is not named after its host", d)
	}
	require.NoError(t, dead.Process.Signal(syscall.SIGKILL))
	_ = dead.Wait()
	require.Eventually(t, func() bool { return goneOrZombie(deadPlugin) }, 10*time.Second, 20*time.Millisecond,
		"the plugin outlived its killed host")
	require.DirExists(t, deadDir, "nothing should have removed the dead host's directory yet")

	// A directory named after the dead host but locked by a live process.
	locked := filepath.Join(tmp, fmt.Sprintf("%s%d-locked", sockDirPrefix, dead.Process.Pid))
	require.NoError(t, os.Mkdir(locked, 0o700))
	f, err := os.Open(locked)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_SH))
	// One of another naming.
	other := filepath.Join(tmp, sockDirPrefix+"123456789")
	require.NoError(t, os.Mkdir(other, 0o700))

	next, nextDir, _ := startHost(t, "once")
	require.NoError(t, next.Wait())
	require.NoDirExists(t, deadDir, "the next host left the dead host's socket directory")
	require.NoDirExists(t, nextDir, "the next host left its own socket directory")
	require.DirExists(t, liveDir, "the live host's directory was removed")
	require.DirExists(t, locked, "a locked directory was removed")
	require.DirExists(t, other)
}
