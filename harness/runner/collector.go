package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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
	pair         *Pair       // the first job's, for shrinking and names
	times        kindTimes   // each kind's observed times (Options.Observe.Time); nil: none
	totals       *sideTotals // each side's observations added up, with times
	learner      Learner     // the Source, when it takes feedback
	feedback     *feedback   // to the learner, nil without one
	res          *Result
	start        time.Time
	lastProgress time.Time
	next         int // the index of the next script to take
	pending      map[int]*batchResult
	seen         map[string]int // signature -> index in res.Findings
	// records are the findings this run stored, by index in
	// res.Findings, to be rewritten with their final hit counts.
	records map[int]*corpus.Finding
	// rewrite: records whose notes changed after they were written.
	rewrite map[int]bool
	// found: the divergences found, for recheckFresh.
	found   []found
	stopped bool
	// known: the index in res.Expected of each known entry that
	// explained something.
	known map[*corpus.KnownEntry]int
	// byCause: the known entry with a cause that explained the shrunk
	// divergence of each signature (its later hits are expected too).
	byCause map[string]*corpus.KnownEntry
	// configKnown is the entry of the divergences the sides'
	// configurations explain (configEntry); nil until one did.
	configKnown *corpus.KnownEntry
}

// take accounts for one batch, script by script in order, and tells the
// sink each script's verdict.
func (c *collector) take(ctx context.Context, br *batchResult) error {
	for i := range br.n {
		index := br.start + i
		script := br.scripts[i]
		failedSig := ""
		for _, f := range br.failures {
			if f.index == index {
				sig, err := c.failure(ctx, br, f)
				if err != nil {
					return err
				}
				if failedSig == "" {
					failedSig = sig
				}
			}
		}
		if failedSig != "" {
			c.tell(Script{Index: index, Verdict: ScriptFailed, Signature: failedSig, Ops: len(script)})
		}
		v := br.verdicts[i]
		if v == nil {
			c.feedback.push(script, [2]ops.Outcome{})
			continue
		}
		c.res.Checks++
		c.res.Ops += len(script)
		if c.res.Stats != nil {
			c.res.Stats.add(script, v.Out[0], v.Out[1])
		}
		if c.times != nil {
			c.times.add(script, v.Out)
			c.totals.add(script, v.Out)
		}
		c.feedback.push(script, v.Out)
		if !v.Diverged() {
			c.tell(Script{Index: index, Verdict: ScriptAgree, Ops: len(script)})
			continue
		}
		sig := c.pair.Signature(script, *v)
		if c.o.Known != nil && c.expected(index, sig) {
			c.tell(Script{Index: index, Verdict: ScriptExpected, Signature: sig, Ops: len(script)})
			continue
		}
		if e, ok := c.byCause[sig]; ok {
			c.account(e, index, sig)
			c.tell(Script{Index: index, Verdict: ScriptExpected, Signature: sig, Ops: len(script)})
			continue
		}
		c.res.Divergences++
		expected, err := c.divergence(ctx, index, br.seeds[i], script, sig, *v)
		if err != nil {
			return err
		}
		if expected {
			c.res.Divergences--
			c.tell(Script{Index: index, Verdict: ScriptExpected, Signature: sig, Ops: len(script)})
			continue
		}
		c.tell(Script{Index: index, Verdict: ScriptDiverged, Signature: sig, Ops: len(script)})
		if !c.o.KeepGoing || c.stopped {
			c.stopped = true
			return nil
		}
	}
	c.progress()
	return nil
}

// tell tells the sink, if there is one, a script's verdict.
func (c *collector) tell(s Script) {
	if c.o.Sink != nil {
		c.o.Sink.Script(s)
	}
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
// Where two observations of one part of the state differ (an address
// space, a /proc/sysvipc listing), the signature names that part and what
// differs in it (ops.Difference), wherever it was seen: a layout step of
// one script and the final state of another that show 6.1's [heap] label
// are both "vma/space/heap-label", one finding; a listing that shows a
// row twice is "shm/listing/shm/dup-row", whether a list step, the final
// listing or the invariant it breaks saw it. Other final-state differences
// are "SUBSYSTEM/final/GROUP", a broken invariant with no finer word
// "SUBSYSTEM/final/invariant".
func Signature(subsystem string, script []ops.Op, pair [2]ops.Outcome, d *equiv.Divergence) string {
	if d.Step < 0 || d.Step >= len(script) {
		group := d.Reason
		if i := strings.Index(group, ":"); i > 0 {
			group = group[:i]
		}
		var diff ops.Difference
		if group == "invariant" {
			diff = ops.Anomaly(pair[0].Snapshot)
			if diff.IsZero() {
				diff = ops.Anomaly(pair[1].Snapshot)
			}
		} else {
			diff = ops.FinalDifference(group, pair[0].Snapshot, pair[1].Snapshot)
		}
		if !diff.IsZero() {
			return subsystem + "/" + diff.String()
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
	ca, cb := class(pair[0]), class(pair[1])
	if ca == "ok" && cb == "ok" {
		if diff := ops.StepDifference(op, pair[0].Results[d.Step], pair[1].Results[d.Step]); !diff.IsZero() {
			return subsystem + "/" + diff.String()
		}
	}
	return fmt.Sprintf("%s/%s/%s-%s", subsystem, op.Kind, ca, cb)
}

// divergence counts a divergence under its signature, and the first time a
// signature appears shrinks the script, reports it and stores it, unless
// a known entry with a cause explains the shrunk divergence: then it
// reports true and stores nothing. A
// divergence that does not reproduce is stored too, unshrunk, as flaky: a
// flaky verdict is a bug of one side (or of the harness), never noise.
func (c *collector) divergence(ctx context.Context, index int, seed uint64, script []ops.Op, sig string, first Verdict) (bool, error) {
	p := c.pair
	if k, ok := c.seen[sig]; ok {
		c.res.Findings[k].Hits++
		return false, nil
	}
	seen := time.Since(c.start).Seconds()
	// The shrinker keeps only scripts that show this divergence: the same
	// signature, not another bug the script also reaches.
	sh, err := p.Shrink(ctx, script, first, p.SameSignature(sig))
	if err != nil {
		if ctx.Err() != nil {
			// The run ends (an interrupt) while the divergence is
			// shrunk: it is kept as it was found, and the run stops
			// there, interrupted.
			c.unshrunk(index, seed, script, sig, first, seen)
			c.stopped = true
			return false, nil
		}
		return false, err
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
	note := fmt.Sprintf("shrunk from %d to %d ops%s", len(script), len(sh.Script), budget)
	d := sh.Verdict.Div
	if sh.Flaky {
		d = first.Div
		note = "FLAKY: the divergence did not reproduce when run again; kept unshrunk with the results of a re-run"
	}
	outs := sh.Verdict.Out
	notes := []string{note, d.Error()}
	for _, k := range sh.Skipped {
		notes = append(notes, "shrink step skipped: "+k)
	}
	script, final := sh.Script, d.Step < 0
	if final && !sh.Flaky {
		// A difference only the final state shows is made one a step
		// shows, so that a reproducer, which checks steps, tells the
		// sides apart, and so that its cause is the observation's.
		w, ok, err := look(ctx, p, &notes, "no witness step", func() (Witnessed, bool, error) { return p.Witness(ctx, sh.Script, sh.Verdict) })
		switch {
		case err != nil:
			return false, err
		case ok:
			script, outs, d = w.Script, w.Verdict.Out, w.Div
			notes = append(notes, fmt.Sprintf("witness: step %d (%s) shows the final state's difference: %s", len(script), ops.FormatOp(script[len(script)-1]), d.Error()))
		}
	}
	f := c.finding("divergence", sig, index, seed, notes)
	f.Script = ops.NewScript(p.Subsystem, script)
	f.A.Results, f.B.Results = outs[0].Results, outs[1].Results
	f.Stated, f.Flaky = "B", sh.Flaky
	if final {
		f.Final = finalGroups(outs[0].Snapshot, outs[1].Snapshot)
	}
	// A flaky divergence (a race's way on one side that a re-run did not
	// take) is keyed by where it was first seen.
	cause, at := CauseKey(p.Subsystem, script, first.Out, first.Div, sig), -1
	if !sh.Flaky {
		var err error
		if cause, at, err = causeOf(ctx, p, script, outs, d, sig, &f.Notes); err != nil {
			return false, err
		}
	}
	if e := c.o.Known.MatchCause(sig, cause, c.res.KernelA, c.res.KernelB, MirrorSignature); e != nil {
		c.byCause[sig] = e
		c.account(e, index, sig)
		return true, nil
	}
	if !sh.Flaky && p.configExplains(ctx, script, outs) {
		e := c.configEntry()
		c.byCause[sig] = e
		c.account(e, index, sig)
		return true, nil
	}
	if cause, err = general(ctx, p, script, at, cause, sig, &f.Notes); err != nil {
		return false, err
	}
	if !sh.Flaky {
		c.found = append(c.found, found{k: len(c.res.Findings), script: script, sig: p.Signature(script, Verdict{Out: outs, Div: d}), step: d.Step})
	}
	c.record(f, "", Finding{Signature: sig, Kind: "divergence", Index: index, Seconds: seen, Ops: len(script), Hits: 1, Cause: cause})
	return false, nil
}

// unshrunk records a divergence the run ended before it was shrunk:
// the script as drawn, with the results that diverged, and a note saying
// so.
func (c *collector) unshrunk(index int, seed uint64, script []ops.Op, sig string, first Verdict, seen float64) {
	p := c.pair
	notes := []string{fmt.Sprintf("NOT SHRUNK: the run ended while this divergence of %d ops was being shrunk; kept as it was found", len(script))}
	if first.Div != nil {
		notes = append(notes, first.Div.Error())
	}
	f := c.finding("divergence", sig, index, seed, notes)
	f.Script = ops.NewScript(p.Subsystem, script)
	f.A.Results, f.B.Results = first.Out[0].Results, first.Out[1].Results
	f.Stated = "B"
	if first.Div != nil && first.Div.Step < 0 {
		f.Final = finalGroups(first.Out[0].Snapshot, first.Out[1].Snapshot)
	}
	cause := CauseKey(p.Subsystem, script, first.Out, first.Div, sig)
	c.record(f, "", Finding{Signature: sig, Kind: "divergence", Index: index, Seconds: seen, Ops: len(script), Hits: 1, Cause: cause})
}

// causeOf is the cause key of divergence d of script (outs its outcomes):
// the call that made the difference (where the results first differ, or
// the last call before the observation that shows it), unless that call
// only met a difference an earlier call left in the state: then that
// call, and notes say where it showed. Where an observation shows the
// difference, only merge probes can see further back than it (an
// anonymous vm_pgoff no layout shows). at is the index of the call the
// key names (-1: the key is sig). Only the end of ctx is an error.
func causeOf(ctx context.Context, p *Pair, script []ops.Op, outs [2]ops.Outcome, d *equiv.Divergence, sig string, notes *[]string) (cause string, at int, err error) {
	cause, at = CauseKey(p.Subsystem, script, outs, d, sig), causeAt(script, outs, d)
	m := maker(script, d.Step)
	if m <= 0 || (m != d.Step && !p.probes(script)) {
		return cause, at, nil
	}
	w, ok, err := look(ctx, p, notes, "no look at the state before the divergence", func() (Witnessed, bool, error) {
		return p.Before(ctx, script, m, outs[0].Results)
	})
	switch {
	case err != nil:
		return cause, at, err
	case ok:
		cause, at = w.Cause(p.Subsystem, sig), w.causeAt()
		*notes = append(*notes, fmt.Sprintf("the states differ before step %d already: after step %d, %s shows it: %s; cause: %s", m+1, w.Prefix, w.appended(), w.Div.Error(), cause))
	}
	return cause, at, nil
}

// general is cause, the key of a divergence of script (signature sig)
// that names the call at index at, with the value of each argument that
// does not matter written "*": script runs again with each other value of
// each argument the key keeps (one batch), and where every one diverges
// under the same signature, the value does not choose the bug ("protect
// *": a sealed range refuses every protection, and a bug in the error it
// returns shows with each). notes say so. Where the batch cannot run, the
// cause stays as it was, and notes say why. Only the end of ctx is an
// error.
func general(ctx context.Context, p *Pair, script []ops.Op, at int, cause, sig string, notes *[]string) (string, error) {
	if at < 0 || at >= len(script) {
		return cause, nil
	}
	alts := ops.Alternatives(script[at])
	var batch [][]ops.Op
	for _, a := range alts {
		for _, op := range a.Ops {
			v := slices.Clone(script)
			v[at] = op
			batch = append(batch, v)
		}
	}
	if len(batch) == 0 {
		return cause, nil
	}
	vs, err := p.Check(ctx, batch)
	switch {
	case err != nil && ctx.Err() != nil:
		return cause, err
	case err != nil:
		*notes = append(*notes, "no run of the cause's other argument values: "+OneLine(err.Error()))
		if rerr := p.Restart(ctx, err); rerr != nil {
			*notes = append(*notes, OneLine(rerr.Error()))
		}
		return cause, nil
	}
	wild := map[int]bool{}
	var names []string
	k := 0
	for _, a := range alts {
		same := true
		for range a.Ops {
			v := vs[k]
			same = same && v.Diverged() && p.Signature(batch[k], v) == sig
			k++
		}
		if same {
			wild[a.Arg] = true
			names = append(names, a.Name)
		}
	}
	if len(wild) == 0 {
		return cause, nil
	}
	g := p.Subsystem + ": " + causeWords(p.Subsystem, script[at], wild)
	*notes = append(*notes, fmt.Sprintf("with each other value of %s at step %d, the script diverges the same way (%d scripts): the value does not matter; cause: %s", strings.Join(names, ", "), at+1, len(batch), g))
	return g, nil
}

// maker is the index of the call that made a divergence at step (-1: the
// final state) show: the call at step, or the last one before it that
// is not an observation; -1 when there is none.
func maker(script []ops.Op, step int) int {
	if step < 0 || step > len(script) {
		step = len(script)
	}
	if step < len(script) && !ops.Observes(script[step]) {
		return step
	}
	for i := step - 1; i >= 0; i-- {
		if !ops.Observes(script[i]) {
			return i
		}
	}
	return -1
}

// look runs an observation of the pair (Witness, Before) for a finding: a
// side that fails it is restarted and the failure noted (under what), so
// that the finding stands without it; only an ended ctx is an error.
func look(ctx context.Context, p *Pair, notes *[]string, what string, f func() (Witnessed, bool, error)) (Witnessed, bool, error) {
	w, ok, err := f()
	switch {
	case err != nil && ctx.Err() != nil:
		return w, false, err
	case err != nil:
		*notes = append(*notes, what+": "+OneLine(err.Error()))
		if rerr := p.Restart(ctx, err); rerr != nil {
			*notes = append(*notes, OneLine(rerr.Error()))
		}
		return w, false, nil
	}
	return w, ok, nil
}

// finding starts the record of something found: the header every finding
// of the run shares, and this one's signature, script number and notes.
func (c *collector) finding(kind, sig string, index int, seed uint64, notes []string) *corpus.Finding {
	p, o := c.pair, c.o
	h := corpus.Header{
		Kind: kind, Version: o.Version, Revision: o.Revision, Date: time.Now().UTC().Format(time.RFC3339),
		Command: o.Command, Seed: o.Seed, Index: index, ScriptSeed: seed, HasSeed: seeded(o.Source),
		Engine: o.Engine, Relation: string(p.Relation), A: p.A.Name, B: p.B.Name,
		AInfo: infoText(p.A.Info), BInfo: infoText(p.B.Info), Kernel: p.KernelRelease(),
		Signature: sig, Hits: 1,
	}
	if facts := p.Facts(); !facts.Empty() {
		h.Facts = facts.String()
	}
	if d := p.ConfigDiffers(); d != "" {
		notes = append(notes, d)
	}
	return &corpus.Finding{Header: h, A: corpus.Side{Name: p.A.Name}, B: corpus.Side{Name: p.B.Name}, Notes: notes}
}

// infoText is what a side says of itself: its name and version.
func infoText(i ops.Info) string {
	return strings.TrimSpace(i.Name + " " + i.Version)
}

// finalGroups are the groups of two final states that differ.
func finalGroups(a, b ops.Snapshot) []corpus.FinalGroup {
	var out []corpus.FinalGroup
	ga, gb := ops.SnapshotGroups(a), ops.SnapshotGroups(b)
	for i := range ga {
		if ga[i].Text != gb[i].Text {
			out = append(out, corpus.FinalGroup{Name: ga[i].Name, A: ga[i].Text, B: gb[i].Text})
		}
	}
	return out
}

// stderrCarrier is an error that holds what a plugin process wrote to its
// stderr (plugins/host.PluginError).
type stderrCarrier interface {
	error
	PluginStderr() string
}

// failure records a side that failed: its one-line reason and, honestly,
// whether a fresh plugin running the script alone failed again. A failure
// no script showed again, one by one on a fresh plugin, is an
// infrastructure event, not a finding (Event): what a kill from outside
// looks like. It returns the failure's signature ("" for an
// infrastructure event).
func (c *collector) failure(ctx context.Context, br *batchResult, f failure) (string, error) {
	line := OneLine(f.err.Error())
	i := f.index - br.start
	if infrastructure(f, line) {
		c.event(br, f, line)
		return "", nil
	}
	c.res.Failures++
	sig := fmt.Sprintf("%s/plugin-failure/%s/%s", c.pair.Subsystem, f.side.Name, failureClass(line))
	if k, ok := c.seen[sig]; ok {
		c.res.Findings[k].Hits++
		return sig, nil
	}
	notes := []string{fmt.Sprintf("%s: %s", f.side.Name, line)}
	if f.alone {
		notes = append(notes, fmt.Sprintf("a fresh %s ran script %d (seed %d) alone and failed again: it reproduces on its own", f.side.Name, f.index, br.seeds[i]))
	} else {
		notes = append(notes, fmt.Sprintf("a fresh %s ran script %d (seed %d) alone without failing: the failure needs what ran before it", f.side.Name, f.index, br.seeds[i]))
	}
	var stderr string
	var sc stderrCarrier
	if errors.As(f.err, &sc) {
		stderr = sc.PluginStderr()
	}
	rec := c.finding("plugin failure", sig, f.index, br.seeds[i], notes)
	rec.Script = ops.NewScript(c.pair.Subsystem, br.scripts[i])
	c.record(rec, stderr, Finding{Signature: sig, Kind: "plugin failure", Index: f.index, Ops: len(br.scripts[i]), Hits: 1, Cause: sig})
	return sig, nil
}

// infrastructure reports whether a side's failure is an infrastructure
// event: no script failed again when the batch ran one script at a time on
// a fresh plugin, or the process was killed by SIGKILL (the OOM killer,
// kill -9) and its script did not fail again alone.
func infrastructure(f failure, line string) bool {
	return !f.alone && (!f.isolated || strings.Contains(line, "signal: killed"))
}

// event records an infrastructure event and says so in one line.
func (c *collector) event(br *batchResult, f failure, line string) {
	c.res.Infrastructure++
	why := "killed from outside (the OOM killer, kill -9)"
	if failureClass(line) == "hung" {
		why = "the batch outlasted the call timeout (a loaded machine, a slow guest)"
	}
	e := Event{Side: f.side.Name, Error: line, Index: f.index, Batch: br.n,
		Reason: fmt.Sprintf("no script of the batch of %d from script %d failed again on a fresh %s, alone: %s, not a finding", br.n, br.start, f.side.Name, why)}
	if f.isolated {
		e.Batch = 1
		e.Reason = fmt.Sprintf("killed by SIGKILL, and script %d did not fail again on a fresh %s, alone: killed from outside (the OOM killer, kill -9), not a finding", f.index, f.side.Name)
	}
	var sc stderrCarrier
	if errors.As(f.err, &sc) {
		e.Stderr = lastLines(sc.PluginStderr(), eventStderrLines)
	}
	c.res.Events = append(c.res.Events, e)
	if c.o.Progress != nil {
		fmt.Fprintf(c.o.Progress, "ipcfuzz: infrastructure event: %s; %s\n", line, e.Reason)
	}
}

// eventStderrLines is how much of a side's stderr (a guest's console) an
// infrastructure event keeps: its last lines, where why it ended shows.
const eventStderrLines = 40

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// record stores a finding under Corpus (and the plugin's stderr beside
// it), shows it on the report and adds it to the result. A finding that
// cannot be stored is lost to no one: it is shown in full, kept in the
// result's Text, counted as unstored, and the run goes on.
func (c *collector) record(f *corpus.Finding, stderr string, res Finding) {
	var path string
	var err error
	if c.o.Corpus != "" {
		path, err = corpus.Store(c.o.Corpus, f, stderr)
		if path != "" { // stored (its stderr, at worst, not)
			c.res.Scripts = append(c.res.Scripts, path)
			res.Script = path
			if stderr != "" {
				f.Stderr = filepath.Base(path) + corpus.StderrExt
			}
			c.records[len(c.res.Findings)] = f
		}
		if err != nil && path != "" && c.o.Progress != nil {
			fmt.Fprintf(c.o.Progress, "ipcfuzz: %s is stored, its plugin's stderr not: %s\n", path, OneLine(err.Error()))
		}
	}
	text := corpus.Render(f)
	if err != nil && path == "" {
		c.res.Unstored++
		res.Text, res.StoreError = text, OneLine(err.Error())
		if c.o.Progress != nil {
			fmt.Fprintf(c.o.Progress, "ipcfuzz: could not store a finding (it follows in full, and is kept in --json): %s\n", res.StoreError)
		}
	}
	if c.o.Report != nil {
		fmt.Fprint(c.o.Report, text)
		if path != "" {
			fmt.Fprintf(c.o.Report, "# written to %s\n", path)
		}
	}
	c.seen[res.Signature] = len(c.res.Findings)
	c.res.Findings = append(c.res.Findings, res)
	if c.o.Sink != nil {
		c.o.Sink.Found(Found{Finding: res, Text: text})
	}
}

// finishRecords rewrites each stored finding that was hit more than once
// with its final hit count.
func (c *collector) finishRecords() {
	for k, f := range c.records {
		hits := c.res.Findings[k].Hits
		if hits == f.Hits && !c.rewrite[k] {
			continue
		}
		f.Hits = hits
		if err := corpus.Rewrite(c.res.Findings[k].Script, f); err != nil && c.o.Progress != nil {
			fmt.Fprintf(c.o.Progress, "ipcfuzz: could not write the hit count of %s: %v\n", c.res.Findings[k].Script, err)
		}
	}
}

// OneLine joins the non-blank lines of s with "; ": a multi-line error as
// one line of a report.
func OneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
