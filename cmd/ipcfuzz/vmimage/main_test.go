package vmimage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// envTestImage names the kernel image the kernel:image= tests boot (.ci/run
// fetches Debian's 6.1 image package and sets it).
const envTestImage = "IPCFUZZ_TEST_IMAGE"

// bin is the ipcfuzz binary built once for these tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ipcfuzz-vmimage")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "ipcfuzz")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		panic("building ipcfuzz: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type outcome struct {
	code           int
	stdout, stderr string
}

// ipcfuzz runs the binary; a run gets 10 minutes (TCG on a loaded machine).
func ipcfuzz(t *testing.T, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return outcome{code, out.String(), errb.String()}
}

func summary(t *testing.T, r outcome) map[string]any {
	t.Helper()
	var m map[string]any
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &m), r.stdout+r.stderr)
	return m
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitRunning waits until a compare whose stderr is errb has opened its
// sides and started comparing.
func waitRunning(t *testing.T, errb *syncBuffer) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "ipcfuzz: ipcfuzz compare ") },
		5*time.Minute, 20*time.Millisecond, "the run never started: %s", errb)
}

func needKernel(t *testing.T) {
	t.Helper()
	m, err := kernel.New()
	if err != nil {
		t.Skipf("the kernel side needs a private IPC namespace: %v", err)
	}
	m.Close()
}

// vmaKernel reports whether the live kernel runs the vma subsystem here.
func vmaKernel(t *testing.T) bool {
	t.Helper()
	return sides.Usable("kernel", "vma") == nil
}
