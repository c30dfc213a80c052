package runner

import (
	"context"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// configDiff is the VMA quirks each side's kernel reports of itself
// (Info.Facts; a side's Config.Facts are the other side's, handed to it);
// ok is true where both report them and they differ in a quirk their
// configurations or machines decide (ops.VMAQuirksConfig: the zero page,
// protection keys, swap, KSM, THP; soft-dirty aside, which a kernel side
// shows as the other side's kernel does).
func (p *Pair) configDiff() (qa, qb ops.VMAQuirks, ok bool) {
	qa, okA := p.A.Info.Facts.VMAQuirks()
	qb, okB := p.B.Info.Facts.VMAQuirks()
	return qa, qb, okA && okB && (qa^qb)&ops.VMAQuirksConfig&^ops.QuirkSoftDirty != 0
}

// configExplains reports whether the sides' configurations alone explain
// a divergence of script (outs: the sides' outcomes): the judge (the
// optimized model) given A's facts gives A's outcome, given B's gives B's,
// and given A's facts with B's configuration quirks in place of its own
// gives B's outcome too, so that A's kernel, configured as B's is, does
// what B's does. Only for a pair with a judge (two kernels) whose
// configuration quirks differ; the models follow those quirks, so the
// difference is the machines', not a kernel's doing. Where the judge
// cannot run the script it explains nothing.
func (p *Pair) configExplains(ctx context.Context, script []ops.Op, outs [2]ops.Outcome) bool {
	qa, qb, ok := p.configDiff()
	if !ok || p.Judge == nil {
		return false
	}
	// Whether a kernel side shows sd on every VMA depends on the kernels
	// of both sides (impls.AddressSpaceModel shows it as the other side's
	// kernel would), not on what any call does: the model standing for a
	// side may show it or not.
	const sd = ops.QuirkSoftDirty
	mixed := qa&^ops.VMAQuirksConfig | qb&ops.VMAQuirksConfig
	for _, c := range []struct {
		facts ops.Facts
		q     ops.VMAQuirks
		want  ops.Outcome
	}{
		{p.A.Info.Facts, qa, outs[0]},
		{p.B.Info.Facts, qb, outs[1]},
		{p.A.Info.Facts, mixed, outs[1]},
	} {
		match := false
		for _, shown := range []ops.VMAQuirks{c.q & sd, c.q&sd ^ sd} {
			j := *p.Judge
			j.Config.Facts = c.facts.With(ops.FactVMAQuirks, int64(c.q&^sd|shown))
			out, err := execSide(ctx, j, [][]ops.Op{script}, nil)
			if err == nil && p.verdict(script, c.want, out[0], false).Div == nil {
				match = true
				break
			}
		}
		if !match {
			return false
		}
	}
	return true
}

// configEntry is the entry under which a run reports the divergences its
// sides' configurations explain (configExplains), one per run.
func (c *collector) configEntry() *corpus.KnownEntry {
	if c.configKnown == nil {
		qa, qb, _ := c.pair.configDiff()
		c.configKnown = &corpus.KnownEntry{
			File: "(the sides' facts)", Pattern: c.pair.Subsystem + "/*", Range: "any", Commit: "-",
			Reason: "the machines' configurations differ (" + configSides(qa, qb) + "): the optimized model given each side's facts gives its results, and A's kernel configured as B's does what B's does",
		}
	}
	return c.configKnown
}
