package perf_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/perf"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

const listing = `subsystem shm
h1 = get shm key=0x10 creat mode=0600 size=1
stat shm h1
repeat n {
get shm key=0x0 mode=0600 size=1
}
measure
list shm
`

// The naive listing (n^2 probes) grows faster than the optimized one (n
// nodes): B slower one way round, not the other; minimised, the setup
// goes; stored, the file is a pattern with a finding's header, and a
// second one of the same name never replaces it.
func TestJudgeMinimizeStore(t *testing.T) {
	t.Parallel()
	p, err := ops.ParsePatternString(listing)
	require.NoError(t, err)
	o := perf.Options{A: sidestest.Subject(t, "optimized"), B: sidestest.Subject(t, "naive"), Sizes: []int{8, 16, 32, 48}, Reps: 1, Threshold: perf.DefaultThreshold}
	require.NoError(t, o.Check())
	v, err := perf.Judge(context.Background(), o, p)
	require.NoError(t, err)
	require.True(t, v.Slower, v.String())
	require.Greater(t, v.B.CI[0], v.A.CI[1])

	back := o
	back.A, back.B = o.B, o.A
	w, err := perf.Judge(context.Background(), back, p)
	require.NoError(t, err)
	require.False(t, w.Slower, w.String())

	m, removed, err := perf.Minimize(context.Background(), o, v)
	require.NoError(t, err)
	require.Equal(t, 2, removed, ops.FormatPattern(m.Pattern))
	require.Empty(t, m.Pattern.Setup)
	require.Equal(t, "shm/perf:get:list", perf.Signature(m.Pattern))

	dir := t.TempDir()
	f := &perf.Finding{Verdict: m, Removed: removed, Metric: "primary counter", Threshold: o.Threshold, Replay: "ipcfuzz compare ..."}
	f.Header = corpus.Header{Kind: perf.Kind, Command: "test", A: "optimized", B: "naive", Signature: perf.Signature(m.Pattern), Hits: 1}
	first, err := perf.Store(dir, f)
	require.NoError(t, err)
	second, err := perf.Store(dir, f)
	require.NoError(t, err)
	require.NotEqual(t, first, second)
	require.True(t, strings.HasSuffix(second, "-2"+perf.Ext), second)
	text, err := os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "shm"), filepath.Dir(first))
	h := corpus.ParseHeader(string(text))
	require.Equal(t, perf.Kind, h.Kind)
	require.Equal(t, "shm/perf:get:list", h.Signature)
	q, err := ops.ParsePatternString(string(text))
	require.NoError(t, err)
	require.Equal(t, ops.FormatPattern(m.Pattern), ops.FormatPattern(q))
}

// Cuts are distinct, measurable at the largest size, each a body of one
// operation before a later one.
func TestCuts(t *testing.T) {
	t.Parallel()
	sc := opstest.Script(t, "subsystem shm\nh1 = get shm key=0x0 mode=0600 size=1\nh2 = get shm key=0x0 mode=0600 size=1\nlist shm\nrmid shm h1\n")
	cuts := perf.Cuts("shm", sc.Ops(), 64)
	require.NotEmpty(t, cuts)
	seen := map[string]bool{}
	for _, c := range cuts {
		text := ops.FormatPattern(c)
		require.False(t, seen[text], "twice: %s", text)
		seen[text] = true
		require.Len(t, c.Body, 1)
		require.Len(t, c.Tail, 1)
		require.NoError(t, c.Check())
	}
}
