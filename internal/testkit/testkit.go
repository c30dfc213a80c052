// Package testkit holds what the end-to-end tests of several packages share:
// building a program once per test process (its link kept in the user's
// cache between processes) into a temporary directory that a killed test
// process does not leave behind for good, running it with a
// deadline, reading its JSON summary, a buffer a running process writes
// while the test reads it, finding a C compiler, and reading the processes
// in /proc. It imports nothing of ours; only tests use it.
package testkit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dirPrefix starts the name of every directory TempDir makes; the pid of
// the test process that made it follows.
const dirPrefix = "ipcfuzz-test-"

// TempDir makes a directory for the programs one test process builds,
// named after the process, and first removes those of test processes that
// are gone: go test kills a test binary that passes its -timeout before
// its TestMain can clean up, and nothing else would.
func TempDir() (string, error) {
	base := os.TempDir()
	if old, err := filepath.Glob(filepath.Join(base, dirPrefix+"*")); err == nil {
		for _, d := range old {
			pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), dirPrefix))
			if err != nil || pid == os.Getpid() || alive(pid) {
				continue
			}
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(base, dirPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("test directory: %w", err)
	}
	return dir, nil
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Build builds the main package pkg (a path as go build takes it) into
// dir/name. The link itself is kept in the user's cache directory (a
// directory per package directory), so that go build finds it up to date
// and skips the link, seconds of CPU each, when nothing it depends on
// changed; dir/name is a hard link to it, or a copy. Without a cache
// directory it builds into dir.
func Build(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cached, unlock, err := cacheSlot(name, pkg)
	if err != nil {
		return out, goBuild(out, pkg)
	}
	defer unlock()
	if err := goBuild(cached, pkg); err != nil {
		return "", err
	}
	if err := os.Link(cached, out); err != nil {
		if err := copyFile(cached, out); err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	return out, nil
}

func goBuild(out, pkg string) error {
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// cacheSlot returns where name, built from pkg, is kept between test
// processes, and holds that directory's lock until unlock: the test
// processes of several packages build the same programs at once. The
// directory is named after pkg's absolute directory, so that two checkouts
// never share a slot.
func cacheSlot(name, pkg string) (path string, unlock func(), err error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", nil, err
	}
	abs := pkg
	if strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg) {
		if abs, err = filepath.Abs(pkg); err != nil {
			return "", nil, err
		}
	} else if wd, err := os.Getwd(); err == nil {
		abs = wd + " " + pkg
	}
	sum := sha256.Sum256([]byte(abs))
	slot := filepath.Join(base, "ipcfuzz", "test-programs", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(slot, 0o700); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(slot, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, err
	}
	return filepath.Join(slot, name), func() { lock.Close() }, nil
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Main is a TestMain body: it builds the main package pkg as dir/ipcfuzz
// into a TempDir, hands its path to set, runs the tests and removes the
// directory. It exits the process.
func Main(m *testing.M, pkg string, set func(bin string)) {
	dir, err := TempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin, err := Build(dir, "ipcfuzz", pkg)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	set(bin)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Outcome is how a program run ended: its exit status and its output.
type Outcome struct {
	Code           int
	Stdout, Stderr string
}

// Run runs bin with args and env added to the environment, for at most
// limit; a run that cannot start, or is killed at the limit, fails the
// test.
func Run(t testing.TB, limit time.Duration, env []string, bin string, args ...string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		require.Failf(t, "run killed", "%s %s: not done after %v\n%s%s", bin, strings.Join(args, " "), limit, out.String(), errb.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		require.NoError(t, err)
	}
	return Outcome{code, out.String(), errb.String()}
}

// Summary decodes the last line of a run's standard output, the JSON
// summary of --json.
func Summary(t testing.TB, r Outcome) map[string]any {
	t.Helper()
	var m map[string]any
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &m), r.Stdout+r.Stderr)
	return m
}

// SyncBuffer is a bytes.Buffer a process writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CCompiler returns the C compiler ($CC, cc or gcc), or skips the test
// saying there is none.
func CCompiler(t testing.TB) string {
	t.Helper()
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Skip("no C compiler ($CC, cc or gcc): the reproducers cannot be built")
	return ""
}

// EnvLong names the environment variable that runs the long tests: QEMU
// boots, end-to-end runs of tens of seconds, the long form of the mutant
// hunts. go test ./... skips them; .ci/run sets it for its root pass.
const EnvLong = "IPCFUZZ_LONG"

// IsLong reports whether the long tests run ($IPCFUZZ_LONG is 1).
func IsLong() bool { return os.Getenv(EnvLong) == "1" }

// Long skips t unless the long tests run, saying how to run it.
func Long(t testing.TB) {
	t.Helper()
	if !IsLong() {
		t.Skip("long test: run with " + EnvLong + "=1 (.ci/run does)")
	}
}
