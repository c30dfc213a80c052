package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// text is the format people read: each finding in full as it is found
// (the finding file's text and where it was written), then one summary
// line, the stats, the known differences and, with --keep-going, the
// causes; a replay says ok or FAIL (with its problems and both sides'
// results) for each file.
type text struct {
	out   *output
	start runner.Start
}

func (t *text) Err() error { return t.out.err }

func (t *text) Start(s runner.Start) { t.start = s }

func (t *text) Script(s runner.Script) {
	if t.start.Files == nil {
		return
	}
	if s.Verdict == runner.ScriptAgree {
		t.out.printf("ok    %s (%d ops)\n", s.Name, s.Ops)
		return
	}
	t.out.printf("FAIL  %s:\n", s.Name)
	for _, p := range s.Problems {
		t.out.printf("  %s\n", p)
	}
	t.out.print(s.Table)
}

func (t *text) Found(f runner.Found) {
	t.out.print(f.Text)
	if f.Finding.Script != "" {
		t.out.printf("# written to %s\n", f.Finding.Script)
	}
}

func (t *text) End(e runner.End) {
	res := e.Result
	if res == nil {
		return
	}
	if t.start.Files != nil {
		if res.Divergences == 0 && !res.Interrupted && e.Err == nil {
			t.out.printf("%d scripts agree on %s vs %s\n", res.Checks, SideLabel(res.A, res.KernelA), SideLabel(res.B, res.KernelB))
		}
		return
	}
	var b strings.Builder
	Summary(&b, res, t.start.KeepGoing)
	t.out.print(b.String())
}

// Summary writes a compare's summary as people read it: one line of
// counts, the stats, what the known differences explained and, when the
// run kept going, the findings by cause.
func Summary(w io.Writer, res *runner.Result, keepGoing bool) {
	note := ""
	if res.Interrupted {
		note = " (interrupted)"
	}
	if res.Infrastructure > 0 {
		note += fmt.Sprintf(", %d infrastructure events (not findings)", res.Infrastructure)
	}
	if res.Unstored > 0 {
		note += fmt.Sprintf(", %d findings could not be stored (printed above)", res.Unstored)
	}
	if expected := res.ExpectedHits(); expected > 0 {
		note += fmt.Sprintf(", %d divergences expected (known differences of the kernels' versions, below)", expected)
	}
	fmt.Fprintf(w, "%s vs %s (%s, engine %s, seed %d, %s): %d checks, %d ops in %.1fs (%.0f ops/s): %d divergences, %d plugin failures%s\n",
		SideLabel(res.A, res.KernelA), SideLabel(res.B, res.KernelB), res.Subsystem, res.Engine, res.Seed, res.Relation, res.Checks, res.Ops, res.Seconds, res.OpsPerSec, res.Divergences, res.Failures, note)
	if st := res.Stats; st != nil && res.Checks > 0 {
		fmt.Fprintf(w, "stats: %d of %d sequences (%.1f%%) had a task blocked and later completed; %d (%.1f%%) had a race (an operation with several allowed outcomes)\n",
			st.BlockedThenCompleted, res.Checks, 100*float64(st.BlockedThenCompleted)/float64(res.Checks),
			st.Races, 100*float64(st.Races)/float64(res.Checks))
	}
	if len(res.Sides) > 0 {
		if line := res.ThroughputLine(); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	for _, line := range res.SideLines() {
		fmt.Fprintln(w, line)
	}
	for _, line := range res.TimingLines() {
		fmt.Fprintln(w, line)
	}
	printKnown(w, res)
	if keepGoing {
		printCauses(w, res)
	}
}

// printKnown says what the known differences explained, apart from the
// findings, and which of them applied but explained nothing.
func printKnown(w io.Writer, res *runner.Result) {
	for _, x := range res.Expected {
		sigs := make([]string, len(x.Signatures))
		for i, s := range x.Signatures {
			sigs[i] = fmt.Sprintf("%s %d", s.Signature, s.Hits)
			if len(s.With) > 0 {
				sigs[i] += " (with " + strings.Join(s.With, ", ") + ")"
			}
		}
		fmt.Fprintf(w, "expected: %d hits, %s (%s; commit %s; %s): %s\n", x.Hits, x.Reason, x.Range, x.Commit, x.Where(), strings.Join(sigs, ", "))
	}
	for _, e := range res.StaleKnown {
		fmt.Fprintf(w, "stale known difference %s: %s (%s) explained nothing in %d checks of %s against %s\n", e.Where(), e.Written(), e.Range, res.Checks, res.KernelA, res.KernelB)
	}
}

// printCauses lists what a --keep-going run found, one cause at a time:
// a cause with one signature in one line, one with several in a line and
// then one indented line per signature.
func printCauses(w io.Writer, res *runner.Result) {
	found := map[string]runner.Finding{}
	for _, f := range res.Findings {
		found[f.Signature] = f
	}
	line := func(prefix string, f runner.Finding) {
		fmt.Fprintf(w, "%s%s: %d hits, first at script %d, %d ops: %s\n", prefix, f.Signature, f.Hits, f.Index, f.Ops, f.Script)
	}
	for _, c := range res.Causes {
		if len(c.Signatures) == 1 {
			line("found ", found[c.Signatures[0].Signature])
			continue
		}
		fmt.Fprintf(w, "found one cause, %s: %d hits under %d signatures:\n", c.Key, c.Hits, len(c.Signatures))
		for _, s := range c.Signatures {
			line("  ", found[s.Signature])
		}
	}
}
