package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Witnessed is a final-state divergence turned into a step divergence: the
// shrunk script with one observation appended (ops.Witnesses) whose result
// differs between the sides.
type Witnessed struct {
	Script  []ops.Op
	Verdict Verdict
	// Div is the divergence at the appended step (Verdict.Div may still
	// be the final state's broken invariant, which is checked first).
	Div *equiv.Divergence
}

// Witness looks for an observation that shows, at a step, what the sides'
// final states after script show differently (v is script's verdict, a
// divergence in the final state). The candidates run in one batch; the
// first whose appended step differs under the pair's relation, and that
// the pair's judge does not allow as a race, is returned. ok is false when
// no candidate shows the difference at its step (the difference is one no
// operation observes, or the script is not a final-state divergence).
func (p *Pair) Witness(ctx context.Context, script []ops.Op, v Verdict) (w Witnessed, ok bool, err error) {
	if v.Div == nil || v.Div.Step >= 0 {
		return w, false, nil
	}
	obs := ops.Witnesses(p.Subsystem, script, v.Out[0].Results)
	if len(obs) == 0 {
		return w, false, nil
	}
	cands := make([][]ops.Op, len(obs))
	for i, o := range obs {
		cands[i] = append(slices.Clip(script), o)
	}
	outA, outB, _, errA, errB := p.exec(ctx, cands)
	if err := sideErrors(errA, errB); err != nil {
		return w, false, fmt.Errorf("witness of a final-state divergence: %w", err)
	}
	for i, c := range cands {
		d := equiv.Compare(p.Relation, c, outA[i], outB[i])
		if d == nil || d.Step != len(script) {
			continue
		}
		if p.judges() {
			jd, err := p.judged(ctx, c, outA[i], outB[i])
			if err != nil {
				return w, false, fmt.Errorf("judge %s: %w", p.Judge.Name, err)
			}
			if jd == nil {
				continue
			}
		}
		return Witnessed{Script: c, Verdict: p.verdict(c, outA[i], outB[i], false), Div: d}, true, nil
	}
	return w, false, nil
}
