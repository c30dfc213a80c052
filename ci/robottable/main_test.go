package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func run(baseNs, headNs int64, baseWake, headWake int64) report {
	return report{Workload: ops.Workload("msg-full-queue"), Sizes: []int{16}, Reps: 3, Impls: []series{
		{Name: "stock", WallNs: []int64{baseNs}, Counters: map[string][]int64{"wakeups": {baseWake}, "receives": {64}}},
		{Name: "seed", WallNs: []int64{headNs}, Counters: map[string][]int64{"wakeups": {headWake}, "receives": {64}}},
	}}
}

// Three runs on each side: the means, their relative deviations and the
// change, for the wall time, every counter and a ratio.
func TestTable(t *testing.T) {
	runs := []report{run(1e6, 2e6, 0, 1024), run(2e6, 2e6, 0, 1024), run(3e6, 2e6, 0, 1024)}
	rows, err := table(runs, []string{"wakeups/receives"})
	require.NoError(t, err)
	var buf bytes.Buffer
	write(&buf, runs, rows)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Equal(t, "3 runs each, 3 repetitions per run", lines[2])
	require.Equal(t, []string{"base", "%stddev", "%change", "head", "%stddev", "metric"}, strings.Fields(lines[4]))
	require.Equal(t, []string{"2", "±", "50.0%", "+0.0%", "2", "msg-full-queue.n=16.wall_ms"}, strings.Fields(lines[5]))
	require.Equal(t, []string{"64", "+0.0%", "64", "msg-full-queue.n=16.receives"}, strings.Fields(lines[6]))
	require.Equal(t, []string{"0", "-", "1024", "msg-full-queue.n=16.wakeups"}, strings.Fields(lines[7]))
	require.Equal(t, []string{"0", "-", "16", "msg-full-queue.n=16.wakeups/receives"}, strings.Fields(lines[8]))
}

// A workload with a unit is shown as units per second.
func TestUnitsPerSecond(t *testing.T) {
	r := run(512e3, 1024e3, 0, 0)
	r.PerRun, r.Unit = 512, "brk"
	rows, err := table([]report{r}, nil)
	require.NoError(t, err)
	require.Equal(t, "msg-full-queue.n=16.brk_per_s", rows[0].metric)
	require.Equal(t, []float64{1e6}, rows[0].base)
	require.Equal(t, []float64{0.5e6}, rows[0].head)
}

func TestDifferentSizesRefused(t *testing.T) {
	a, b := run(1, 1, 0, 0), run(1, 1, 0, 0)
	b.Sizes = []int{32}
	_, err := table([]report{a, b}, nil)
	require.Error(t, err)
}
