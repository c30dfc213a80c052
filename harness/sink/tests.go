package sink

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// status is a test's: passed, failed or skipped.
type status int

const (
	passed status = iota
	failed
	skipped
)

// testCase is one test of the KTAP and JUnit formats: its name, its
// status, why it was skipped, and its diagnostics, one line each.
type testCase struct {
	name   string
	status status
	skip   string
	diag   []string
}

// compareCases are the tests of a compare: one per finding (texts holds
// each one's finding file by signature), one skipped per signature a
// known difference explained, and the run.
func compareCases(start runner.Start, e runner.End, texts map[string]string) []testCase {
	res := e.Result
	var out []testCase
	for _, f := range res.Findings {
		d := []string{fmt.Sprintf("%s %s: %d hits, first at script %d, %d ops, cause %s", f.Kind, f.Signature, f.Hits, f.Index, f.Ops, f.Cause)}
		if f.Script != "" {
			d = append(d, "file: "+f.Script)
		}
		if f.StoreError != "" {
			d = append(d, "not stored: "+f.StoreError)
		}
		d = append(d, lines(texts[f.Signature])...)
		out = append(out, testCase{name: f.Signature, status: failed, diag: d})
	}
	for _, x := range res.Expected {
		for _, s := range x.Signatures {
			out = append(out, testCase{name: s.Signature, status: skipped,
				skip: fmt.Sprintf("known difference: %s (%s; commit %s)", x.Reason, x.Range, x.Commit),
				diag: []string{fmt.Sprintf("%d hits, first at script %d; explained by %s", s.Hits, s.Index, x.Where())}})
		}
	}
	var b strings.Builder
	Summary(&b, res, start.KeepGoing)
	run := testCase{name: "compare", diag: lines(b.String())}
	for _, ev := range res.Events {
		run.diag = append(run.diag, fmt.Sprintf("infrastructure event at script %d: %s: %s; %s", ev.Index, ev.Side, ev.Error, ev.Reason))
	}
	switch {
	case e.Err != nil:
		run.status = failed
		run.diag = append(run.diag, "stopped: "+runner.OneLine(e.Err.Error()))
	case res.Infrastructure > 0:
		run.status = failed
	case res.Interrupted:
		run.status, run.skip = skipped, fmt.Sprintf("interrupted after %d checks", res.Checks)
	}
	return append(out, run)
}

// replayCase is the test of one replayed file.
func replayCase(s runner.Script) testCase {
	c := testCase{name: s.Name, diag: []string{fmt.Sprintf("%d ops", s.Ops)}}
	if s.Verdict != runner.ScriptAgree {
		c.status = failed
		c.diag = append(c.diag, s.Problems...)
		c.diag = append(c.diag, lines(s.Table)...)
	}
	return c
}

// notRun is the test of a file a replay did not reach.
func notRun(file string, e runner.End) testCase {
	why := "not run: the replay was interrupted"
	if e.Err != nil {
		why = "not run: " + runner.OneLine(e.Err.Error())
	}
	return testCase{name: file, status: skipped, skip: why}
}

// lines splits a text into its lines, without the last newline.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
