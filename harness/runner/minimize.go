package runner

import (
	"context"
	"errors"
	"fmt"

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
	// Script is the minimal script (the original one when Flaky).
	Script []ops.Op
	// Verdict is Script's verdict, run once more after shrinking.
	Verdict Verdict
	// Budget: shrinking stopped when its budget of work was spent (Script
	// is the best found until then).
	Budget bool
	// Flaky: the divergence did not show again when the minimal script
	// ran once more; Script is the original and Verdict a re-run's.
	Flaky bool
}

// Shrink minimizes script, whose verdict first diverged, keeping only
// candidates that keep accepts (nil: any divergence), then runs the
// minimal script once more for its verdict. What follows the first
// diverging step is tried away first (a whole pass saved). A shrink that
// fails for another reason than its budget keeps the unshrunk script.
func (p *Pair) Shrink(ctx context.Context, script []ops.Op, first Verdict, keep Keep) (Shrunk, error) {
	oracle := p.Oracle(keep)
	start := script
	if d := first.Div; d != nil && d.Step >= 0 && d.Step+1 < len(script) {
		if fails, err := oracle(ctx, [][]ops.Op{script[:d.Step+1]}); err == nil && fails[0] {
			start = script[:d.Step+1]
		}
	}
	min, err := shrink.Minimize(ctx, start, oracle)
	out := Shrunk{Script: min}
	switch {
	case errors.Is(err, shrink.ErrBudget):
		out.Budget = true
	case err != nil:
		out.Script = script // keep the unshrunk script rather than lose the finding
	}
	v, err := p.CheckOne(ctx, out.Script)
	if err != nil {
		return out, fmt.Errorf("re-running the shrunk divergence: %w", err)
	}
	if v.Diverged() {
		out.Verdict = v
		return out, nil
	}
	out.Script, out.Flaky = script, true
	if out.Verdict, err = p.CheckOne(ctx, script); err != nil {
		return out, fmt.Errorf("re-running a flaky divergence: %w", err)
	}
	return out, nil
}
