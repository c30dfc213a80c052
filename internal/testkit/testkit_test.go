package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A directory left by a test process that is gone is removed by the next
// TempDir; one of a live process stays.
func TestTempDirRemovesTheDeadOnly(t *testing.T) {
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	dead := filepath.Join(base, dirPrefix+strconv.Itoa(gone.Process.Pid))
	live := filepath.Join(base, dirPrefix+"1") // init never exits
	for _, d := range []string{dead, live} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "sub"), 0o700))
	}
	dir, err := TempDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(base, dirPrefix+strconv.Itoa(os.Getpid())), dir)
	require.NoDirExists(t, dead)
	require.DirExists(t, live)
	require.DirExists(t, dir)
}

// Run reports a program's exit status and output.
func TestRunReportsTheExitStatus(t *testing.T) {
	r := Run(t, 0x7fffffffffff, []string{"X=7"}, "sh", "-c", "echo out $X; echo err >&2; exit 3")
	require.Equal(t, Outcome{Code: 3, Stdout: "out 7\n", Stderr: "err\n"}, r)
}

// Long skips a test unless IPCFUZZ_LONG is 1, and lets it run when it is.
func TestLongSkipsUnlessAsked(t *testing.T) {
	for _, c := range []struct {
		val  string
		runs bool
	}{{"", false}, {"0", false}, {"yes", false}, {"1", true}} {
		t.Setenv(EnvLong, c.val)
		ran := false
		t.Run("IPCFUZZ_LONG="+c.val, func(t *testing.T) {
			Long(t)
			ran = true
		})
		require.Equal(t, c.runs, ran, "IPCFUZZ_LONG=%q", c.val)
	}
}
