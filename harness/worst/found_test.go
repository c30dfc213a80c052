package worst_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
)

// A found pattern measured again on naive against optimized: the listing
// grows faster on naive, the ratio says so, and the files are named after
// the subsystem, the implementation and the pattern.
func TestRemeasureWrite(t *testing.T) {
	t.Parallel()
	p, err := ops.ParsePatternString("subsystem shm\nrepeat n {\nget shm key=0x0 mode=0600 size=1\n}\nmeasure\nlist shm\n")
	require.NoError(t, err)
	o := naiveVsOptimized(t, "shm", "", 1)
	f, err := worst.Remeasure(context.Background(), o, p, []int{16, 32, 64, 128})
	require.NoError(t, err)
	require.Equal(t, worst.Name("shm", "naive", p), f.Name)
	require.True(t, strings.HasPrefix(f.Name, "shm-naive-"), f.Name)
	require.NotNil(t, f.Ratio)
	require.Greater(t, f.Ratio.Exponent, 0.5, f.Table)
	require.Contains(t, f.Table, "naive/optimized ratio")
	require.Equal(t, "ipcfuzz complexity naive optimized --workload "+filepath.Join("d", f.Name+".perf")+" --metric counter", f.Measure("d"))

	dir := t.TempDir()
	file, _, err := f.Write(dir, "found by: a test")
	require.NoError(t, err)
	text, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(text), "# found by: a test\n"), string(text))
	back, err := ops.ParsePatternString(string(text))
	require.NoError(t, err)
	require.Equal(t, ops.FormatPattern(p), ops.FormatPattern(back))
	_, err = os.Stat(filepath.Join(dir, f.Name+".txt"))
	require.NoError(t, err)
}

func TestSummarizeNoScore(t *testing.T) {
	o := options(t, "ids", "naive", worst.Wall, 7)
	s := worst.Summarize(o, &worst.Result{Evaluated: 3, Invalid: 3})
	require.Equal(t, worst.Summary{A: "naive", Subsystem: "ids", Metric: "wall", Seed: 7, Evaluated: 3, Invalid: 3}, s)
	require.Equal(t, "every candidate failed or took no time", worst.NoScore(worst.Wall))
	require.Contains(t, worst.NoScore(""), "the metric primary counter was missing")
}
