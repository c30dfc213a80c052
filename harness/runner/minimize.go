package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/shrink"
)

// Keep says whether a candidate's verdict still shows the divergence being
// shrunk (it is called only for candidates that diverge).
type Keep func(script []ops.Op, v Verdict) bool

// SameSignature keeps the candidates whose divergence has the signature
// sig: the same bug, not another one the script also reaches.
func (p *Pair) SameSignature(sig string) Keep {
	return func(script []ops.Op, v Verdict) bool { return p.Signature(script, v) == sig }
}

// Oracle is the shrink oracle of the pair: a candidate fails when the sides
// diverge on it and keep (nil: any divergence) accepts the verdict.
func (p *Pair) Oracle(keep Keep) shrink.Oracle {
	return func(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
		vs, err := p.Check(ctx, cands)
		if err != nil {
			return nil, err
		}
		fails := make([]bool, len(cands))
		for i, v := range vs {
			fails[i] = v.Diverged() && (keep == nil || keep(cands[i], v))
		}
		return fails, nil
	}
}

// Shrunk is a divergence shrunk to a minimal script.
type Shrunk struct {
	// Script is the minimal script (the original one when Flaky): the
	// shortest one found that still diverged.
	Script []ops.Op
	// Verdict is Script's verdict, run once more after shrinking (or, when
	// that run failed on a side, the verdict the shrink saw).
	Verdict Verdict
	// Budget: shrinking stopped when its budget of work was spent (Script
	// is the best found until then).
	Budget bool
	// Flaky: the divergence did not show again when the minimal script
	// ran once more; Script is the original and Verdict a re-run's.
	Flaky bool
	// Skipped says, one line each, which steps of the shrink failed on a
	// side (a call that timed out, a plugin that died): each was skipped
	// with a fresh plugin, as if its candidates did not diverge. The
	// MaxShrinkSkips-th stops the shrink (CutShort).
	Skipped []string
	// CutShort: shrinking stopped before its end because its steps kept
	// failing on a side (or a side could not be restarted), or its time
	// (Pair.ShrinkTime) was up (TimeUp); Script is the shortest diverging
	// script found until then.
	CutShort, TimeUp bool
}

// MaxShrinkSkips is how many failed steps a shrink skips before it stops:
// each may have cost a whole call timeout.
const MaxShrinkSkips = 3

// errCutShort stops the shrinker once its steps failed too often.
var errCutShort = errors.New("shrinking cut short: its steps kept failing on a side")

// Shrink minimizes script, whose verdict first diverged, keeping only
// candidates that keep accepts (nil: any divergence), then runs the
// minimal script once more for its verdict. What follows the first
// diverging step is tried away first (a whole pass saved).
//
// It never loses the divergence: a step whose call fails on a side (it
// timed out, the plugin died) is skipped with a fresh plugin (Restart),
// and after MaxShrinkSkips of them, or when a side cannot be restarted,
// shrinking stops with the shortest diverging script so far (CutShort).
// When the last run of that script fails on a side, the verdict the shrink
// saw stands. Only the end of ctx is an error.
func (p *Pair) Shrink(ctx context.Context, script []ops.Op, first Verdict, keep Keep) (Shrunk, error) {
	r := &shrinkRun{p: p, keep: keep, orig: script, first: first, best: script, bestV: first}
	mctx := ctx
	if p.ShrinkTime > 0 {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(ctx, p.ShrinkTime)
		defer cancel()
	}
	start := script
	if d := first.Div; d != nil && d.Step >= 0 && d.Step+1 < len(script) {
		if fails, err := r.oracle(mctx, [][]ops.Op{script[:d.Step+1]}); err == nil && fails[0] {
			start = script[:d.Step+1]
		}
	}
	min, err := shrink.Minimize(mctx, start, r.oracle)
	out := Shrunk{Script: min}
	switch {
	case errors.Is(err, shrink.ErrBudget):
		out.Budget = true
	case err != nil && ctx.Err() != nil:
		return out, err
	case err != nil && mctx.Err() != nil:
		out.CutShort, out.TimeUp = true, true
	case err != nil:
		out.CutShort = true
	}
	v, err := r.rerun(ctx, out.Script)
	out.Skipped = r.skipped
	if err != nil {
		return out, fmt.Errorf("re-running the shrunk divergence: %w", err)
	}
	if v.Diverged() {
		out.Verdict = v
		return out, nil
	}
	out.Script, out.Flaky = script, true
	out.Verdict, err = r.rerun(ctx, script)
	out.Skipped = r.skipped
	if err != nil {
		return out, fmt.Errorf("re-running a flaky divergence: %w", err)
	}
	return out, nil
}

// shrinkRun is one Shrink: its oracle, what it skipped, and the last
// diverging candidate it adopted with its verdict.
type shrinkRun struct {
	p       *Pair
	keep    Keep
	orig    []ops.Op
	first   Verdict
	skipped []string
	cut     bool
	best    []ops.Op
	bestV   Verdict
}

// oracle is Pair.Oracle, recording the first diverging candidate of each
// call (the one the shrinker adopts) and, when a call fails on a side,
// running the candidates again one at a time on fresh plugins.
func (r *shrinkRun) oracle(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
	if r.cut {
		return nil, errCutShort
	}
	vs, err := r.p.Check(ctx, cands)
	if err == nil {
		return r.judge(cands, vs), nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	if err := r.skip(ctx, err, ""); err != nil {
		return nil, err
	}
	fails := make([]bool, len(cands))
	for i, c := range cands {
		v, err := r.p.CheckOne(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if err := r.skip(ctx, err, fmt.Sprintf("a candidate of %d ops", len(c))); err != nil {
				return nil, err
			}
			continue
		}
		if r.judge(cands[i:i+1], []Verdict{v})[0] {
			fails[i] = true
			return fails, nil
		}
	}
	return fails, nil
}

// judge says which candidates still show the divergence, and keeps the
// first of them (the one the shrinker adopts) with its verdict.
func (r *shrinkRun) judge(cands [][]ops.Op, vs []Verdict) []bool {
	fails := make([]bool, len(cands))
	found := false
	for i, v := range vs {
		fails[i] = v.Diverged() && (r.keep == nil || r.keep(cands[i], v))
		if fails[i] && !found {
			r.best, r.bestV, found = cands[i], v, true
		}
	}
	return fails
}

// skip records a step that failed on a side (what, or a batch of
// candidates when empty) and restarts that side; it stops the shrink
// (errCutShort) after MaxShrinkSkips steps, or when the side cannot be
// restarted.
func (r *shrinkRun) skip(ctx context.Context, err error, what string) error {
	if what == "" {
		what = "a batch of candidates"
	}
	r.skipped = append(r.skipped, fmt.Sprintf("%s: %s", what, OneLine(err.Error())))
	if rerr := r.p.Restart(ctx, err); rerr != nil {
		r.cut = true
		r.skipped = append(r.skipped, OneLine(rerr.Error()))
		return fmt.Errorf("%w: %v", errCutShort, rerr)
	}
	if len(r.skipped) >= MaxShrinkSkips {
		r.cut = true
		return errCutShort
	}
	return nil
}

// rerun runs script once more for its verdict; when that fails on a side,
// the side is restarted and the verdict the shrink saw of script (the
// original's, or the last adopted candidate's) stands.
func (r *shrinkRun) rerun(ctx context.Context, script []ops.Op) (Verdict, error) {
	v, err := r.p.CheckOne(ctx, script)
	if err == nil || ctx.Err() != nil {
		return v, err
	}
	var seen Verdict
	switch {
	case slices.Equal(r.best, script):
		seen = r.bestV
	case slices.Equal(r.orig, script):
		seen = r.first
	default:
		return v, err
	}
	r.skipped = append(r.skipped, fmt.Sprintf("the last run of the shrunk script (its results are those the shrink saw): %s", OneLine(err.Error())))
	if rerr := r.p.Restart(ctx, err); rerr != nil {
		r.skipped = append(r.skipped, OneLine(rerr.Error()))
	}
	return seen, nil
}
