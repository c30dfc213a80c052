package runner_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// writeBigScript writes the 400k-operation script of the memory tests:
// pairs get of a private queue, rmid of it.
func writeBigScript(t testing.TB, pairs int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.ops")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "subsystem ids")
	for i := 1; i <= pairs; i++ {
		fmt.Fprintf(w, "h%d = get msg key=0x0 mode=0600\nrmid msg h%d\n", i, i)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// statusKB reads a field of /proc/PID/status ("VmHWM") in kB.
func statusKB(pid string, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%s/status", field, pid)
}

// heapPeak samples the heap (objects, live or not yet swept) until stop is
// called, and returns the largest sample.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// The bound: a 400k-operation script replays in well under 256 MB.
const (
	maxHostHWM  = 256 << 20 // the test process's peak RSS, in bytes
	maxHostHeap = 128 << 20 // the test process's peak heap during the replay
)

// A 400k-operation script, replayed from its file through two real plugin
// processes, keeps the host's memory bounded: the script is read, sent and
// compared a chunk at a time, never held whole. The peak heap is sampled
// with runtime/metrics during the replay, and the peak RSS (VmHWM) of the
// test process is reset before it (clear_refs) and read after it; the
// plugins' VmHWM is logged. It takes some seconds; no time is asserted.
func TestReplayOf400kOpsStaysSmall(t *testing.T) {
	testkit.Long(t) // replays 400k operations through two plugins: seconds of CPU
	if testing.Short() {
		t.Skip("replays 400k operations")
	}
	path := writeBigScript(t, 200_000)
	a, b := open(t, "naive", true), open(t, "optimized", true)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()

	runtime.GC()
	// Writing 5 to clear_refs resets the peak RSS to the current RSS.
	resetHWM := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	stop := heapPeak()
	p, ok := pairOf(t, a, b, "ids", equiv.Exact)
	require.True(t, ok)
	n, err := p.Replay(context.Background(), ops.NewScriptReader(path, f), runner.ReplayOptions{})
	heap := stop()
	require.NoError(t, err)
	require.Equal(t, 400_000, n)

	t.Logf("host peak heap during the replay: %.1f MB", float64(heap)/(1<<20))
	require.Less(t, heap, uint64(maxHostHeap), "the host's heap peaked at %d bytes", heap)
	hwm, err := statusKB("self", "VmHWM")
	require.NoError(t, err)
	if resetHWM == nil {
		t.Logf("host peak RSS (VmHWM) during the replay: %.1f MB", float64(hwm)/1024)
	} else {
		t.Logf("host peak RSS (VmHWM) of the whole test process: %.1f MB (clear_refs: %v)", float64(hwm)/1024, resetHWM)
	}
	require.Less(t, hwm<<10, int64(maxHostHWM), "the host's RSS peaked at %d kB", hwm)
	for _, s := range []opened{a, b} {
		if pid := s.side.Impl.(*host.Plugin).Pid(); pid > 0 {
			if kb, err := statusKB(strconv.Itoa(pid), "VmHWM"); err == nil {
				t.Logf("plugin %s peak RSS (VmHWM): %.1f MB", s.side.Name, float64(kb)/1024)
			}
		}
	}
}
