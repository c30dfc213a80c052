package sink

import (
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// compareStart opens the compare the tests tell.
var compareStart = runner.Start{Command: "ipcfuzz compare naive kernel --subsystem msg --seed 3", A: "naive", B: "kernel", KernelB: "6.1.0-57-amd64",
	Subsystem: "msg", Relation: "exact", Engine: "rapid", Seed: 3, Checks: 6, KeepGoing: true}

// found is a finding of the tests' compare.
func found(sig, kind, file string, index int) runner.Found {
	return runner.Found{Finding: runner.Finding{Signature: sig, Kind: kind, Script: file, Index: index, Ops: 2, Hits: 1, Cause: sig},
		Text: "# ipcfuzz " + kind + "\n# signature: " + sig + "\nsubsystem msg\nh1 = get msg key=0x0 mode=0600 -> id=0\n"}
}

// tellCompare tells s a compare of six scripts with two findings (one hit
// twice), a divergence a known difference explains, and end, whose result
// set changes.
func tellCompare(s runner.Sink, end func(*runner.Result, *runner.End)) {
	s.Start(compareStart)
	div := found("msg/msgrcv/ENOMSG-ok", "divergence", "findings/msg/a.ops", 1)
	fail := found("msg/plugin-failure/kernel/crashed", "plugin failure", "", 4)
	fail.Finding.StoreError = "read-only file system"
	s.Script(runner.Script{Index: 0, Verdict: runner.ScriptAgree, Ops: 5})
	s.Found(div)
	s.Script(runner.Script{Index: 1, Verdict: runner.ScriptDiverged, Signature: div.Finding.Signature, Ops: 9})
	s.Script(runner.Script{Index: 2, Verdict: runner.ScriptExpected, Signature: "msg/space/heap-label", Ops: 4})
	s.Script(runner.Script{Index: 3, Verdict: runner.ScriptDiverged, Signature: div.Finding.Signature, Ops: 7})
	s.Found(fail)
	s.Script(runner.Script{Index: 4, Verdict: runner.ScriptFailed, Signature: fail.Finding.Signature, Ops: 3})
	s.Script(runner.Script{Index: 5, Verdict: runner.ScriptAgree, Ops: 5})
	entry := &corpus.KnownEntry{File: "corpus/known/msg.known", Line: 3, Pattern: "msg/space/*", Range: "<6.2", Commit: "abc123", Reason: "6.1 # labels the heap"}
	d, f := div.Finding, fail.Finding
	d.Hits = 2
	res := &runner.Result{A: "naive", B: "kernel", KernelB: "6.1.0-57-amd64", Subsystem: "msg", Checks: 5, Ops: 30, Divergences: 2, Failures: 1,
		Seconds: 1.5, OpsPerSec: 20, Seed: 3, Engine: "rapid", Relation: "exact", Findings: []runner.Finding{d, f},
		Causes:   []runner.Cause{{Key: d.Cause, Signatures: []runner.CauseSignature{{Signature: d.Signature, Hits: 2}}, Hits: 2}, {Key: f.Cause, Signatures: []runner.CauseSignature{{Signature: f.Signature, Hits: 1}}, Hits: 1}},
		Expected: []runner.Expected{{KnownEntry: entry, Hits: 1, Signatures: []runner.ExpectedSignature{{Signature: "msg/space/heap-label", Hits: 1, Index: 2}}}}}
	e := runner.End{Result: res}
	if end != nil {
		end(res, &e)
	}
	s.End(e)
}

// tellReplay tells s a replay of three files, the first agreeing, the
// second not, interrupted before the third.
func tellReplay(s runner.Sink) {
	s.Start(runner.Start{A: "naive", B: "optimized", Subsystem: "ids", Relation: "exact", Files: []string{"a.ops", "b #2.ops", "c.ops"}})
	s.Script(runner.Script{Index: 0, Name: "a.ops", Verdict: runner.ScriptAgree, Ops: 3})
	s.Script(runner.Script{Index: 1, Name: "b #2.ops", Verdict: runner.ScriptDiverged, Ops: 2,
		Problems: []string{"step 2 (get sem): A -> id=32769, B -> id=1", "Subtest: not a header"}, Table: "step  A  B\n  2*  id=32769  id=1\n"})
	s.End(runner.End{Result: &runner.Result{A: "naive", B: "optimized", Checks: 2, Ops: 5, Divergences: 1, Interrupted: true}})
}

func render(t *testing.T, format string, tell func(runner.Sink)) (string, string) {
	t.Helper()
	var out, notes strings.Builder
	w, err := New(format, &out, &notes)
	require.NoError(t, err)
	tell(w)
	require.NoError(t, w.Err())
	return out.String(), notes.String()
}

// The text format is the summary people read, as compare always printed
// it: the findings in full as they come, then the counts, the known
// differences and the causes.
func TestTextCompare(t *testing.T) {
	out, notes := render(t, "text", func(s runner.Sink) { tellCompare(s, nil) })
	require.Empty(t, notes)
	require.Equal(t, `# ipcfuzz divergence
# signature: msg/msgrcv/ENOMSG-ok
subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
# written to findings/msg/a.ops
# ipcfuzz plugin failure
# signature: msg/plugin-failure/kernel/crashed
subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
naive vs kernel [Linux 6.1.0-57-amd64] (msg, engine rapid, seed 3, exact): 5 checks, 30 ops in 1.5s (20 ops/s): 2 divergences, 1 plugin failures, 1 divergences expected (known differences of the kernels' versions, below)
expected: 1 hits, 6.1 # labels the heap (<6.2; commit abc123; corpus/known/msg.known:3): msg/space/heap-label 1
found msg/msgrcv/ENOMSG-ok: 2 hits, first at script 1, 2 ops: findings/msg/a.ops
found msg/plugin-failure/kernel/crashed: 1 hits, first at script 4, 2 ops: 
`, out)
}

// A replay in text says ok or FAIL for each file, and that they agree
// only when all did.
func TestTextReplay(t *testing.T) {
	out, _ := render(t, "text", tellReplay)
	require.Equal(t, "ok    a.ops (3 ops)\nFAIL  b #2.ops:\n  step 2 (get sem): A -> id=32769, B -> id=1\n  Subtest: not a header\nstep  A  B\n  2*  id=32769  id=1\n", out)
}

// JSON is the result on out, and the findings, for people, on notes.
func TestJSON(t *testing.T) {
	out, notes := render(t, "json", func(s runner.Sink) { tellCompare(s, nil) })
	require.True(t, strings.HasPrefix(out, `{"a":"naive","b":"kernel","subsystem":"msg","checks":5,`), out)
	require.Equal(t, 1, strings.Count(out, "\n"))
	require.Contains(t, notes, "# written to findings/msg/a.ops\n")
}

func TestUnknownFormat(t *testing.T) {
	_, err := New("tap", nil, nil)
	require.EqualError(t, err, `unknown format "tap" (want text, json, ktap or junit)`)
}

// The KTAP of a compare has a test per finding, a skipped one per
// signature a known difference explained and the run's; the kernel's
// own parser reads it so.
func TestKTAPCompare(t *testing.T) {
	out, _ := render(t, "ktap", func(s runner.Sink) { tellCompare(s, nil) })
	require.True(t, strings.HasPrefix(out, "KTAP version 1\n# ipcfuzz compare naive kernel --subsystem msg --seed 3\n# found msg/msgrcv/ENOMSG-ok at script 1: findings/msg/a.ops\n"), out)
	require.Contains(t, out, "\n1..4\n")
	require.Contains(t, out, "# # ipcfuzz divergence\n")
	require.Contains(t, out, "\nnot ok 1 msg/msgrcv/ENOMSG-ok\n")
	require.Contains(t, out, "# not stored: read-only file system\n")
	require.Contains(t, out, "\nnot ok 2 msg/plugin-failure/kernel/crashed\n")
	require.Contains(t, out, "\nok 3 msg/space/heap-label # SKIP known difference: 6.1  labels the heap (<6.2; commit abc123)\n")
	require.True(t, strings.HasSuffix(out, "\nok 4 compare\n"), out)

	k := testkit.RequireKTAP(t, testkit.KunitParser(t), out, "FAILURE", [5]int{1, 2, 0, 1, 0})
	require.Equal(t, "msg/plugin-failure/kernel/crashed", k.Tests[1].Name)
}

// The run's own test fails on an infrastructure event or an error, and is
// skipped when the run was interrupted.
func TestKTAPRun(t *testing.T) {
	dir := testkit.KunitParser(t)
	for _, c := range []struct {
		name   string
		end    func(*runner.Result, *runner.End)
		status string
		counts [5]int
	}{
		{"infrastructure", func(r *runner.Result, _ *runner.End) {
			r.Findings, r.Expected, r.Infrastructure = nil, nil, 1
			r.Events = []runner.Event{{Side: "kernel", Error: "signal: killed", Index: 3, Batch: 8, Reason: "killed from outside"}}
		}, "FAILURE", [5]int{0, 1, 0, 0, 0}},
		{"error", func(r *runner.Result, e *runner.End) { e.Err = errors.New("shrink:\nside failed") }, "FAILURE", [5]int{0, 3, 0, 1, 0}},
		{"interrupted", func(r *runner.Result, _ *runner.End) { r.Findings, r.Expected, r.Interrupted = nil, nil, true }, "SKIPPED", [5]int{0, 0, 0, 1, 0}},
		{"clean", func(r *runner.Result, _ *runner.End) { r.Findings, r.Expected = nil, nil }, "SUCCESS", [5]int{1, 0, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := render(t, "ktap", func(s runner.Sink) { tellCompare(s, c.end) })
			testkit.RequireKTAP(t, dir, out, c.status, c.counts)
		})
	}
}

// The KTAP of a replay has its plan first and a test per file as it is
// replayed; a file not reached is skipped. Names lose their "#", and a
// diagnostic never reads as a subtest's header.
func TestKTAPReplay(t *testing.T) {
	out, _ := render(t, "ktap", tellReplay)
	require.True(t, strings.HasPrefix(out, "KTAP version 1\n# replay on naive vs optimized, exact\n1..3\n# 3 ops\nok 1 a.ops\n"), out)
	require.Contains(t, out, "# > Subtest: not a header\n")
	require.Contains(t, out, "\nnot ok 2 b__2.ops\n")
	require.True(t, strings.HasSuffix(out, "\nok 3 c.ops # SKIP not run: the replay was interrupted\n"), out)
	testkit.RequireKTAP(t, testkit.KunitParser(t), out, "FAILURE", [5]int{1, 1, 0, 1, 0})
}

// JUnit holds the same tests as KTAP, in one document.
func TestJUnit(t *testing.T) {
	var doc junitSuites
	out, _ := render(t, "junit", func(s runner.Sink) { tellCompare(s, nil) })
	require.NoError(t, xml.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, [3]int{4, 2, 1}, [3]int{doc.Tests, doc.Failures, doc.Skipped})
	require.Len(t, doc.Suites, 1)
	require.Equal(t, "msg/msgrcv/ENOMSG-ok", doc.Suites[0].Cases[0].Name)
	require.Contains(t, doc.Suites[0].Cases[0].Failure.Text, "# ipcfuzz divergence")

	out, _ = render(t, "junit", tellReplay)
	doc = junitSuites{}
	require.NoError(t, xml.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, [3]int{3, 1, 1}, [3]int{doc.Tests, doc.Failures, doc.Skipped})
}

// --report's page is a sink too: a tee tells it beside the format, and it
// writes the page of the stored findings at the end, or says why not.
func TestHTMLTee(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	var out strings.Builder
	text, err := New("text", &out, nil)
	require.NoError(t, err)
	html := HTML(page, report.Options{Title: "a run"})
	tellCompare(Tee(text, html), func(r *runner.Result, _ *runner.End) { r.Findings, r.Scripts = nil, nil })
	require.NoError(t, Tee(text, html).Err())
	require.Contains(t, out.String(), "2 divergences")
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(b), "a run")

	html = HTML(page, report.Options{})
	tellCompare(html, func(r *runner.Result, _ *runner.End) { r.Scripts = []string{"no/such/finding.ops"} })
	require.ErrorContains(t, Tee(text, html).Err(), "no/such/finding.ops")
}
