package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Witnessed is a final-state divergence turned into a step divergence: the
// shrunk script with one observation appended (ops.Witnesses) whose result
// differs between the sides.
type Witnessed struct {
	Script  []ops.Op
	Verdict Verdict
	// Div is the divergence at an appended step (Verdict.Div may still
	// be the final state's broken invariant, which is checked first).
	Div *equiv.Divergence
	// Prefix is how many operations of Script come before what was
	// appended (one witness, or a merge probe's map and layout).
	Prefix int
}

// Cause is the cause key of what w found (CauseKey): the last operation
// of its prefix that is not an observation made the states differ.
func (w Witnessed) Cause(subsystem, sig string) string {
	return CauseKey(subsystem, w.Script[:w.Prefix], w.Verdict.Out, &equiv.Divergence{Step: w.Prefix}, sig)
}

// causeAt is the index of the call Cause names (-1: none).
func (w Witnessed) causeAt() int {
	return causeAt(w.Script[:w.Prefix], w.Verdict.Out, &equiv.Divergence{Step: w.Prefix})
}

// appended says what w appended to its prefix: "layout", or "map w:6+1
// rw-, then layout" (a merge probe).
func (w Witnessed) appended() string {
	parts := make([]string, 0, len(w.Script)-w.Prefix)
	for _, op := range w.Script[w.Prefix:] {
		parts = append(parts, ops.FormatOp(op))
	}
	return strings.Join(parts, ", then ")
}

// candidate is a script Witness or Before runs: a prefix of the script
// looked at, and what is appended to it.
type candidate struct {
	script []ops.Op
	prefix int
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
	return p.observe(ctx, witnessed(p.Subsystem, script, v.Out[0].Results, len(script), len(script), false))
}

// maxBeforeCandidates bounds the scripts Before runs (a shrunk script is a
// few operations; a longer one is looked at from its end).
const maxBeforeCandidates = 256

// Before looks for the first operation of script after which the sides'
// states differ, where they first diverge at step k (the results of every
// step before k are the same): a call whose results are the same on both
// sides can leave different states (6.1's failed fixed mremap unmaps its
// target first), and the later call that meets the difference is not its
// cause. Every prefix script[:j], j <= k, is observed by its witnesses,
// and by its merge probes (ops.MergeProbes: a map beside a range the
// prefix made, then a layout, which shows an anonymous vm_pgoff that no
// layout shows; only where both sides follow the same VMA rules), in one
// batch; the shortest prefix that shows a difference is returned, its
// last operation the one that made it. ok is false when no prefix shows
// one: the divergence starts at step k.
func (p *Pair) Before(ctx context.Context, script []ops.Op, k int, results []ops.Result) (w Witnessed, ok bool, err error) {
	if k <= 0 || k > len(script) || k > len(results) {
		return w, false, nil
	}
	return p.observe(ctx, witnessed(p.Subsystem, script, results, 1, k, p.probes(script)))
}

// probes reports whether Before looks at script with merge probes too:
// where the subsystem has them and the sides follow the same VMA rules.
func (p *Pair) probes(script []ops.Op) bool {
	return p.sameVMARules() && len(ops.MergeProbes(p.Subsystem, script)) > 0
}

// sameVMARules reports whether the sides follow the same VMA rules as far
// as they say (the quirks each reports; one that reports none is taken to
// follow the other's): where two kernels' versions merge differently, a
// merge probe would show that, not what a call of the script did.
func (p *Pair) sameVMARules() bool {
	qa, okA := p.A.Config.Facts.VMAQuirks()
	qb, okB := p.B.Config.Facts.VMAQuirks()
	return !okA || !okB || qa == qb
}

// witnessed is every prefix script[:j], from <= j <= to, with each of its
// witnesses appended, and with probes each of its merge probes after
// them, shortest prefixes first (at most maxBeforeCandidates, the longest
// prefixes kept).
func witnessed(sub string, script []ops.Op, results []ops.Result, from, to int, probes bool) []candidate {
	var out []candidate
	for j := to; j >= from; j-- {
		var tails [][]ops.Op
		for _, w := range ops.Witnesses(sub, script[:j], results[:min(j, len(results))]) {
			tails = append(tails, []ops.Op{w})
		}
		if probes {
			tails = append(tails, ops.MergeProbes(sub, script[:j])...)
		}
		if len(out)+len(tails) > maxBeforeCandidates {
			break
		}
		for i := len(tails) - 1; i >= 0; i-- {
			out = append(out, candidate{script: append(slices.Clip(script[:j]), tails[i]...), prefix: j})
		}
	}
	slices.Reverse(out)
	return out
}

// observe runs the candidates (prefixes with a witness or a probe
// appended each) in one batch and returns the first that first differs,
// under the pair's relation, at a step appended, where the judge allows
// no race.
func (p *Pair) observe(ctx context.Context, cands []candidate) (w Witnessed, ok bool, err error) {
	if len(cands) == 0 {
		return w, false, nil
	}
	scripts := make([][]ops.Op, len(cands))
	for i, c := range cands {
		scripts[i] = c.script
	}
	outA, outB, _, errA, errB := p.exec(ctx, scripts)
	if err := sideErrors(errA, errB); err != nil {
		return w, false, fmt.Errorf("witness of a state difference: %w", err)
	}
	for i, cand := range cands {
		c := cand.script
		d := equiv.Compare(p.Relation, c, outA[i], outB[i])
		if d == nil || d.Step < cand.prefix {
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
		return Witnessed{Script: c, Verdict: p.verdict(c, outA[i], outB[i], false), Div: d, Prefix: cand.prefix}, true, nil
	}
	return w, false, nil
}
