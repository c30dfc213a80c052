package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
)

// race is a msg finding found by compare (testdata/msg-race.ops): tasks
// asleep in msgsnd and msgrcv, and a first diverging step.
const race = "testdata/msg-race.ops"

func TestFindingHasStepsLanesAndFirstDivergence(t *testing.T) {
	f, err := report.Read(race)
	require.NoError(t, err)
	require.Equal(t, "divergence", f.Kind)
	require.Equal(t, "msg", f.Subsystem)
	require.NotEmpty(t, f.A)
	require.NotEmpty(t, f.B)
	require.Positive(t, f.First, "a divergence has a first diverging step")
	s := f.Steps[f.First-1]
	require.True(t, s.Diverges)
	require.NotEqual(t, s.A, s.B)
	for _, st := range f.Steps[:f.First-1] {
		require.False(t, st.Diverges, "step %d is before the first divergence", st.N)
	}
	slept := 0
	for _, l := range f.Lanes {
		for _, sl := range l.Sleeps {
			require.LessOrEqual(t, sl.From, sl.To)
			slept++
		}
	}
	require.Positive(t, slept, "the race has tasks that sleep")
	var b bytes.Buffer
	require.NoError(t, report.Write(&b, []report.Finding{f}, report.Options{}))
	page := b.String()
	require.Contains(t, page, fmt.Sprintf(`<tr id="f0-s%d" class="diverge first">`, f.First))
	require.Contains(t, page, fmt.Sprintf(`href="#f0-s%d"`, f.First))
	require.Contains(t, page, `class="sleep sleep-`)
	require.Contains(t, page, "ipcfuzz repro "+race)
	require.NotContains(t, page, "<script", "the page is static")
	require.NotRegexp(t, `(src|href)="?(https?:)?//`, page, "the page needs no network")
}

// A final state that differs is shown as a diff of the two states.
func TestFinalStateDiff(t *testing.T) {
	text := `# ipcfuzz divergence
# format: 2
# command: ipcfuzz compare a b --subsystem ids --seed 1
# side A: a
# side B: b
# stated: B
# final msg ids of A:
#   limit=32000 next_id=-1 max_idx=0 objects=1
#   rows=1
# final msg ids of B:
#   limit=32000 next_id=-1 max_idx=1 objects=1
#   rows=1
subsystem ids
get msg key=0x0 mode=0600 -> id=0
`
	f, err := report.Parse("x.ops", text)
	require.NoError(t, err)
	require.Zero(t, f.First)
	require.Len(t, f.Final, 1)
	require.Equal(t, "msg ids", f.Final[0].Group)
	require.True(t, f.Final[0].Lines[0].Differs)
	require.False(t, f.Final[0].Lines[1].Differs)
	var b bytes.Buffer
	require.NoError(t, report.Write(&b, []report.Finding{f}, report.Options{}))
	require.Contains(t, b.String(), `<tr class="differs"><td>limit=32000 next_id=-1 max_idx=0 objects=1</td>`)
}

// A script without a table (a seed) shows its stated results.
func TestSeedShowsStatedResults(t *testing.T) {
	f, err := report.Read("../../corpus/sem/seed-spec-scenarios.ops")
	require.NoError(t, err)
	require.Equal(t, "script", f.Kind)
	require.Zero(t, f.First)
	require.Equal(t, "blocked", f.Steps[1].A)
	require.NotEmpty(t, f.Lanes)
}

// Bad input is one error naming the file.
func TestBadFindingNamesTheFile(t *testing.T) {
	_, err := report.Parse("bad.ops", "subsystem ids\nget msg key=zz\n")
	require.ErrorContains(t, err, "bad.ops")
	_, err = report.Read(filepath.Join(t.TempDir(), "missing.ops"))
	require.Error(t, err)
}

// thousand is 1000 findings, the race's text under 1000 names.
func thousand(tb testing.TB) []string {
	text, err := os.ReadFile(race)
	require.NoError(tb, err)
	dir := tb.TempDir()
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("%04d.ops", i))
		require.NoError(tb, os.WriteFile(paths[i], text, 0o644))
	}
	return paths
}

func readWrite(tb testing.TB, paths []string) int {
	fs := make([]report.Finding, len(paths))
	for i, p := range paths {
		f, err := report.Read(p)
		require.NoError(tb, err)
		fs[i] = f
	}
	var b bytes.Buffer
	require.NoError(tb, report.Write(&b, fs, report.Options{}))
	return b.Len()
}

// A report of 1000 findings is one file under 10 MB.
func TestThousandFindingsUnderTenMB(t *testing.T) {
	n := readWrite(t, thousand(t))
	require.Less(t, n, 10<<20)
	t.Logf("1000 findings: %d bytes", n)
}

// BenchmarkReport1000 reads 1000 findings and writes their page (the
// acceptance: under 2 s, one file under 10 MB).
func BenchmarkReport1000(b *testing.B) {
	paths := thousand(b)
	var n int
	for b.Loop() {
		n = readWrite(b, paths)
	}
	b.ReportMetric(float64(n)/(1<<20), "MB")
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(race); err != nil {
		fmt.Fprintln(os.Stderr, "report tests: "+race+" is missing")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// A finding of format 1 (no results in its body) has its sides read from
// its side-by-side table.
func TestFormatOneFindingReadsItsTable(t *testing.T) {
	f, err := report.Read("../../corpus/ids/3da5cb29c069.ops")
	require.NoError(t, err)
	require.Equal(t, 2, f.First)
	require.Equal(t, "id=32769", f.Steps[1].A)
	require.Equal(t, "id=1", f.Steps[1].B)
}

// A complexity plot (an SVG of ipcfuzz complexity --plot) is shown in the
// page; a plot that holds a script is refused.
func TestPlotIsInlined(t *testing.T) {
	f, err := report.Read(race)
	require.NoError(t, err)
	var b bytes.Buffer
	svg := []byte(`<?xml version="1.0"?><svg width="10" height="10"><rect class="fit" width="5" height="5"/></svg>`)
	require.NoError(t, report.Write(&b, []report.Finding{f}, report.Options{Plot: svg}))
	require.Contains(t, b.String(), `<section class="plot"><h3>Complexity</h3><svg width="10" height="10"><rect class="fit"`)
	err = report.Write(&b, nil, report.Options{Plot: []byte(`<svg><script>alert(1)</script></svg>`)})
	require.ErrorContains(t, err, "script")
	err = report.Write(&b, nil, report.Options{Plot: []byte(`not a plot`)})
	require.ErrorContains(t, err, "not an SVG")
}
