package vmimage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// envTestImage names the kernel image the kernel:image= tests boot (.ci/run
// fetches Debian's 6.1 image package and sets it).
const envTestImage = "IPCFUZZ_TEST_IMAGE"

// bin is the ipcfuzz binary built once for these tests.
var bin string

func TestMain(m *testing.M) { testkit.Main(m, "..", func(b string) { bin = b }) }

type outcome struct {
	code           int
	stdout, stderr string
}

// ipcfuzz runs the binary; a run gets 10 minutes (TCG on a loaded machine).
func ipcfuzz(t *testing.T, args ...string) outcome {
	t.Helper()
	r := testkit.Run(t, 10*time.Minute, nil, bin, args...)
	return outcome{r.Code, r.Stdout, r.Stderr}
}

func summary(t *testing.T, r outcome) map[string]any {
	t.Helper()
	return testkit.Summary(t, testkit.Outcome{Code: r.code, Stdout: r.stdout, Stderr: r.stderr})
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer = testkit.SyncBuffer

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
