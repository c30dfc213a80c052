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
	return p.observe(ctx, witnessed(p.Subsystem, script, v.Out[0].Results, len(script), len(script)))
}

// maxBeforeCandidates bounds the scripts Before runs (a shrunk script is a
// few operations; a longer one is looked at from its end).
const maxBeforeCandidates = 256

// Before looks for the first operation of script after which the sides'
// states differ, where they first diverge at step k (the results of every
// step before k are the same): a call whose results are the same on both
// sides can leave different states (6.1's failed fixed mremap unmaps its
// target first), and the later call that meets the difference is not its
// cause. Every prefix script[:j], j <= k, is observed by its witnesses in
// one batch; the shortest that shows a difference is returned, its last
// operation before the witness the one that made it. ok is false when no
// prefix shows one: the divergence starts at step k.
func (p *Pair) Before(ctx context.Context, script []ops.Op, k int, results []ops.Result) (w Witnessed, ok bool, err error) {
	if k <= 0 || k > len(script) || k > len(results) {
		return w, false, nil
	}
	return p.observe(ctx, witnessed(p.Subsystem, script, results, 1, k))
}

// witnessed is every prefix script[:j], from <= j <= to, with each of its
// witnesses appended, shortest prefixes first (at most
// maxBeforeCandidates, the longest prefixes kept).
func witnessed(sub string, script []ops.Op, results []ops.Result, from, to int) [][]ops.Op {
	var out [][]ops.Op
	for j := to; j >= from; j-- {
		obs := ops.Witnesses(sub, script[:j], results[:min(j, len(results))])
		if len(out)+len(obs) > maxBeforeCandidates {
			break
		}
		for i := len(obs) - 1; i >= 0; i-- {
			out = append(out, append(slices.Clip(script[:j]), obs[i]))
		}
	}
	slices.Reverse(out)
	return out
}

// observe runs the candidates (prefixes with one witness appended each) in
// one batch and returns the first whose appended step differs under the
// pair's relation and is not a race the judge allows.
func (p *Pair) observe(ctx context.Context, cands [][]ops.Op) (w Witnessed, ok bool, err error) {
	if len(cands) == 0 {
		return w, false, nil
	}
	outA, outB, _, errA, errB := p.exec(ctx, cands)
	if err := sideErrors(errA, errB); err != nil {
		return w, false, fmt.Errorf("witness of a state difference: %w", err)
	}
	for i, c := range cands {
		d := equiv.Compare(p.Relation, c, outA[i], outB[i])
		if d == nil || d.Step != len(c)-1 {
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
