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
		agrees, ok := c.agrees(ctx, f.script)
		if ok && !agrees && !fresh && restarts < maxRecheckRestarts {
			restarts++
			if !c.restartForRecheck(ctx) {
				return
			}
			agrees, ok = c.agrees(ctx, f.script)
		}
		fresh = false
		if !ok {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if !agrees {
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

// agrees runs script once on the pair: whether its sides agree, and ok
// false where the run failed (the pair is restarted for the next one).
func (c *collector) agrees(ctx context.Context, script []ops.Op) (agrees, ok bool) {
	vs, err := c.pair.Check(ctx, [][]ops.Op{script})
	if err != nil {
		if ctx.Err() == nil {
			_ = c.pair.Restart(ctx, err)
		}
		return false, false
	}
	return !vs[0].Diverged(), true
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
