package runner

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// found is a divergence found, for the recheck on fresh sides: its index
// in Result.Findings and its shrunk script.
type found struct {
	k      int
	script []ops.Op
	// sig and step are the signature and the step (-1: the final state)
	// of the divergence its record states.
	sig  string
	step int
}

// outlivesNote is the note of a finding that a fresh side did not show.
const outlivesNote = "run again on restarted sides after the run, the shrunk script agrees: the divergence needed a state that earlier scripts left in a side and its reset between scripts did not undo (a leak, such as commit charge a buggy kernel never gives back), not this script alone; cause: %s"

// recheckFresh runs each divergence found again, once the run is over, on
// sides restarted once (a fresh plugin, a fresh guest). One that agrees
// there needed what earlier scripts left in a side that the reset between
// scripts does not undo: its cause becomes "SUBSYSTEM: state outlives the
// reset", one cause however many signatures such a leak made, and its
// record says so. The findings are run again latest first, so that the
// finding that leaked (found first) leaks again only after the ones it
// caused were seen on a clean side; one that diverges on a side an earlier
// recheck ran on (and may have left a leak in) is run once more on sides
// restarted for it, so that each is judged on a side nothing ran on
// before (at most maxRecheckRestarts times a run: a guest's restart takes
// seconds; past that a finding keeps its cause). Sides that cannot be
// restarted (in process models) are run as they are; a pair with none that
// can is not rechecked.
func (c *collector) recheckFresh(ctx context.Context) {
	p := c.pair
	if len(c.found) == 0 || ctx.Err() != nil || !restartable(p) {
		return
	}
	if !c.restartForRecheck(ctx) {
		return
	}
	fresh, restarts := true, 0
	cause := fmt.Sprintf("%s: state outlives the reset", p.Subsystem)
	for i := len(c.found) - 1; i >= 0; i-- {
		f := c.found[i]
		v, ok := c.agrees(ctx, f.script)
		agrees := ok && !v.Diverged()
		onFresh := fresh
		if ok && !agrees && !fresh && restarts < maxRecheckRestarts {
			restarts++
			if !c.restartForRecheck(ctx) {
				return
			}
			v, ok = c.agrees(ctx, f.script)
			agrees, onFresh = ok && !v.Diverged(), true
		}
		fresh = false
		if !ok {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if !agrees {
			if onFresh {
				c.rejudge(ctx, f, v)
			}
			continue
		}
		c.res.Findings[f.k].Cause = cause
		c.res.Findings[f.k].OutlivesReset = true
		if rec := c.records[f.k]; rec != nil {
			rec.Notes = append(rec.Notes, fmt.Sprintf(outlivesNote, cause))
			c.rewrite[f.k] = true
		}
	}
}

// maxRecheckRestarts bounds the restarts recheckFresh adds for the
// findings that diverge on a side an earlier recheck ran on.
const maxRecheckRestarts = 16

// agrees runs script once on the pair: its verdict, and ok false where
// the run failed (the pair is restarted for the next one).
func (c *collector) agrees(ctx context.Context, script []ops.Op) (v Verdict, ok bool) {
	vs, err := c.pair.Check(ctx, [][]ops.Op{script})
	if err != nil {
		if ctx.Err() == nil {
			_ = c.pair.Restart(ctx, err)
		}
		return Verdict{}, false
	}
	return vs[0], true
}

// freshNote is the note of a finding whose shrunk script diverges
// otherwise on a fresh side than its record said.
const freshNote = "run again on restarted sides after the run, the shrunk script diverges at %s (%s), not at %s (%s) as it did where it was shrunk: that side had been left in a state its reset did not undo; the results above are the fresh sides', and its cause is judged there: %s"

// rejudge takes the verdict v of finding f's shrunk script on fresh
// sides where it differs from the one its record states (another step or
// signature: the side it was shrunk or re-run on had leaked): its cause
// is keyed by the fresh divergence (and by the call before it that
// already left the states different), and its record's results become
// the fresh ones, so that a replay on a fresh kernel shows what it says.
func (c *collector) rejudge(ctx context.Context, f found, v Verdict) {
	p := c.pair
	d := v.Div
	sig := p.Signature(f.script, v)
	if d == nil || (d.Step == f.step && sig == f.sig) {
		return
	}
	var notes []string
	cause, at, err := causeOf(ctx, p, f.script, v.Out, d, sig, &notes)
	if err != nil {
		return
	}
	if cause, err = general(ctx, p, f.script, at, cause, sig, &notes); err != nil {
		return
	}
	c.res.Findings[f.k].Cause = cause
	rec := c.records[f.k]
	if rec == nil {
		return
	}
	rec.Notes = append(rec.Notes, fmt.Sprintf(freshNote, stepName(d.Step), sig, stepName(f.step), f.sig, cause))
	rec.Notes = append(rec.Notes, notes...)
	if d.Step >= 0 {
		rec.A.Results, rec.B.Results = v.Out[0].Results, v.Out[1].Results
		rec.Final = nil
	}
	c.rewrite[f.k] = true
}

// stepName names a divergence's step: "step N" (1-based) or "the final
// state".
func stepName(step int) string {
	if step < 0 {
		return "the final state"
	}
	return fmt.Sprintf("step %d", step+1)
}

// restartForRecheck restarts every side of the pair that can be; false,
// said on the progress stream, when one cannot.
func (c *collector) restartForRecheck(ctx context.Context) bool {
	for _, s := range []Side{c.pair.A, c.pair.B} {
		if _, ok := s.Impl.(Restarter); ok {
			if err := restartSide(ctx, s); err != nil {
				if c.o.Progress != nil {
					fmt.Fprintf(c.o.Progress, "ipcfuzz: findings not checked on a fresh %s: %s\n", s.Name, OneLine(err.Error()))
				}
				return false
			}
		}
	}
	return true
}

// restartable reports whether a side of p can be restarted.
func restartable(p *Pair) bool {
	for _, s := range []Side{p.A, p.B} {
		if _, ok := s.Impl.(Restarter); ok {
			return true
		}
	}
	return false
}
