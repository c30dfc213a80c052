package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// collector takes the workers' batches in script order and turns them into
// the run's result.
type collector struct {
	o            Options
	pair         *Pair // the first job's, for shrinking and names
	res          *Result
	start        time.Time
	lastProgress time.Time
	next         int // the index of the next script to take
	pending      map[int]*batchResult
	seen         map[string]int // signature -> index in res.Findings
	stopped      bool
}

// take accounts for one batch, script by script in order.
func (c *collector) take(ctx context.Context, br *batchResult) error {
	for i := range br.n {
		index := br.start + i
		for _, f := range br.failures {
			if f.index == index {
				if err := c.failure(ctx, br, f); err != nil {
					return err
				}
			}
		}
		v := br.verdicts[i]
		if v == nil {
			continue
		}
		script := br.scripts[i]
		c.res.Checks++
		c.res.Ops += len(script)
		if c.res.Stats != nil {
			c.res.Stats.add(script, v.Out[0], v.Out[1])
		}
		if !v.Diverged() {
			continue
		}
		c.res.Divergences++
		if err := c.divergence(ctx, index, br.seeds[i], script, *v); err != nil {
			return err
		}
		if !c.o.KeepGoing {
			c.stopped = true
			return nil
		}
	}
	c.progress()
	return nil
}

func (c *collector) progress() {
	if c.o.Progress == nil || time.Since(c.lastProgress) < 2*time.Second {
		return
	}
	c.lastProgress = time.Now()
	el := time.Since(c.start).Seconds()
	fmt.Fprintf(c.o.Progress, "ipcfuzz: %d checks, %d ops, %.0f checks/s, %.0f ops/s, %d divergences, %d plugin failures\n",
		c.res.Checks, c.res.Ops, float64(c.res.Checks)/el, float64(c.res.Ops)/el, c.res.Divergences, c.res.Failures)
}

// Signature groups divergences that are most likely one bug: the
// subsystem, the kind of the first operation whose results differ (or the
// final-state group) and the two results' classes (errno, ok or blocked).
func Signature(subsystem string, script []ops.Op, pair [2]ops.Outcome, d *equiv.Divergence) string {
	if d.Step < 0 || d.Step >= len(script) {
		group := d.Reason
		if i := strings.Index(group, ":"); i > 0 {
			group = group[:i]
		}
		return fmt.Sprintf("%s/final/%s", subsystem, group)
	}
	op := script[d.Step]
	class := func(o ops.Outcome) string {
		if d.Step >= len(o.Results) {
			return "none"
		}
		r := o.Results[d.Step]
		switch {
		case r.Err != ops.OK:
			return r.Err.String()
		case r.Blocked:
			return "blocked"
		}
		return "ok"
	}
	return fmt.Sprintf("%s/%s/%s-%s", subsystem, op.Kind, class(pair[0]), class(pair[1]))
}

// divergence counts a divergence under its signature, and the first time a
// signature appears shrinks the script, reports it and stores it. A
// divergence that does not reproduce is stored too, unshrunk, as flaky: a
// flaky verdict is a bug of one side (or of the harness), never noise.
func (c *collector) divergence(ctx context.Context, index int, seed uint64, script []ops.Op, first Verdict) error {
	p := c.pair
	sig := p.Signature(script, first)
	if k, ok := c.seen[sig]; ok {
		c.res.Findings[k].Hits++
		return nil
	}
	// The shrinker keeps only scripts that show this divergence: the same
	// signature, not another bug the script also reaches.
	sh, err := p.Shrink(ctx, script, first, p.SameSignature(sig))
	if err != nil {
		return err
	}
	budget := ""
	if sh.Budget {
		budget = " (shrinking stopped when its budget of work was spent)"
	}
	if len(sh.Skipped) > 0 {
		stopped := ""
		if sh.CutShort {
			stopped = ", and it stopped there"
		}
		budget += fmt.Sprintf(" (the shrink was cut short: %d of its steps failed on a side and were skipped, each with a fresh plugin%s; this is the shortest script that still diverged)", len(sh.Skipped), stopped)
	}
	o := c.o
	note := fmt.Sprintf("script %d of seed %d (script seed %d), relation %s, shrunk from %d to %d ops%s", index, o.Seed, seed, p.Relation, len(script), len(sh.Script), budget)
	d := sh.Verdict.Div
	if sh.Flaky {
		d = first.Div
		note = fmt.Sprintf("script %d of seed %d (script seed %d), relation %s: FLAKY, the divergence did not reproduce when run again; kept unshrunk with the results of a re-run", index, o.Seed, seed, p.Relation)
	}
	outs := sh.Verdict.Out
	notes := []string{note, "signature " + sig, d.Error()}
	for _, k := range sh.Skipped {
		notes = append(notes, "shrink step skipped: "+k)
	}
	f := corpus.Finding{
		Kind:    "divergence",
		Command: o.Command,
		Notes:   notes,
		A:       corpus.Side{Name: p.A.Name, Results: outs[0].Results},
		B:       corpus.Side{Name: p.B.Name, Results: outs[1].Results},
	}
	if d.Step < 0 {
		f.Notes = append(f.Notes, snapshotNotes(outs[0].Snapshot, outs[1].Snapshot)...)
	}
	path, err := c.record(ops.NewScript(p.Subsystem, sh.Script), f, "")
	if err != nil {
		return err
	}
	c.seen[sig] = len(c.res.Findings)
	c.res.Findings = append(c.res.Findings, Finding{Signature: sig, Kind: "divergence", Script: path, Index: index, Ops: len(sh.Script), Hits: 1})
	return nil
}

// snapshotNotes shows the groups of two final states that differ.
func snapshotNotes(a, b ops.Snapshot) []string {
	var notes []string
	ga, gb := ops.SnapshotGroups(a), ops.SnapshotGroups(b)
	for i := range ga {
		if ga[i].Text == gb[i].Text {
			continue
		}
		notes = append(notes, fmt.Sprintf("final %s of A:", ga[i].Name))
		notes = append(notes, strings.Split(strings.TrimSpace(ga[i].Text), "\n")...)
		notes = append(notes, fmt.Sprintf("final %s of B:", gb[i].Name))
		notes = append(notes, strings.Split(strings.TrimSpace(gb[i].Text), "\n")...)
	}
	return notes
}

// stderrCarrier is an error that holds what a plugin process wrote to its
// stderr (plugins/host.PluginError).
type stderrCarrier interface {
	error
	PluginStderr() string
}

// failure records a side that failed: its one-line reason and, honestly,
// whether a fresh plugin running the script alone failed again.
func (c *collector) failure(ctx context.Context, br *batchResult, f failure) error {
	c.res.Failures++
	line := oneLine(f.err.Error())
	sig := fmt.Sprintf("%s/plugin-failure/%s/%s", c.pair.Subsystem, f.side.Name, failureClass(line))
	if k, ok := c.seen[sig]; ok {
		c.res.Findings[k].Hits++
		return nil
	}
	notes := []string{fmt.Sprintf("%s: %s", f.side.Name, line)}
	i := f.index - br.start
	switch {
	case f.alone:
		notes = append(notes, fmt.Sprintf("a fresh %s ran script %d (seed %d) alone and failed again: it reproduces on its own", f.side.Name, f.index, br.seeds[i]))
	case f.isolated:
		notes = append(notes, fmt.Sprintf("a fresh %s ran script %d (seed %d) alone without failing: the failure needs what ran before it", f.side.Name, f.index, br.seeds[i]))
	default:
		notes = append(notes, fmt.Sprintf("no script of the batch of %d from script %d failed on its own (a kill from outside, or state carried across scripts); the first is kept", br.n, br.start))
	}
	var stderr string
	var sc stderrCarrier
	if errors.As(f.err, &sc) {
		stderr = sc.PluginStderr()
	}
	path, err := c.record(ops.NewScript(c.pair.Subsystem, br.scripts[i]), corpus.Finding{Kind: "plugin failure", Command: c.o.Command, Notes: notes}, stderr)
	if err != nil {
		return err
	}
	c.seen[sig] = len(c.res.Findings)
	c.res.Findings = append(c.res.Findings, Finding{Signature: sig, Kind: "plugin failure", Script: path, Index: f.index, Ops: len(br.scripts[i]), Hits: 1})
	return nil
}

// failureClass is the part of a plugin error that says how it failed
// ("crashed", "hung", ...), for signatures.
func failureClass(line string) string {
	for _, k := range []string{"cannot start", "handshake failed", "crashed", "hung", "sent garbage", "implementation failed"} {
		if strings.Contains(line, ": "+k+": ") {
			return strings.ReplaceAll(k, " ", "-")
		}
	}
	return "failed"
}

// record writes a finding to the corpus (and the plugin's stderr beside
// it) and shows it on the report.
func (c *collector) record(sc *ops.Script, f corpus.Finding, stderr string) (string, error) {
	var path string
	if c.o.Corpus != "" {
		path = corpus.PathOf(c.o.Corpus, sc)
		if stderr != "" {
			f.Notes = append(f.Notes, "the plugin's full stderr is in "+path+".stderr")
		}
		if _, err := corpus.Write(c.o.Corpus, sc, f); err != nil {
			return "", err
		}
		c.res.Scripts = append(c.res.Scripts, path)
		if stderr != "" {
			if err := os.WriteFile(path+".stderr", []byte(stderr), 0o644); err != nil {
				return "", fmt.Errorf("corpus: %w", err)
			}
		}
	}
	if c.o.Report != nil {
		fmt.Fprint(c.o.Report, corpus.Render(sc, f))
		if path != "" {
			fmt.Fprintf(c.o.Report, "# written to %s\n", path)
		}
	}
	return path, nil
}

// oneLine joins the non-blank lines of s with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
