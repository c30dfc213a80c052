package runner

import (
	"context"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// configDiff is the VMA quirks that two kernels report of themselves
// (Info.Facts; a side's Config.Facts are those it is handed, the other
// side's) and that their configurations or machines decide (ops.VMAQuirksConfig: the zero page, soft-dirty,
// protection keys, swap, KSM, THP) and that differ between A and B, with
// both sides' quirks; ok is false where a side reports none or the
// configuration quirks are the same.
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
	// A kernel side shows sd where the other side's kernel tracks
	// soft-dirty bits (impls.AddressSpaceModel): the model that stands for
	// it shows them as that side does.
	const sd = ops.QuirkSoftDirty
	shownAs := func(q, other ops.VMAQuirks) ops.VMAQuirks { return q&^sd | other&sd }
	mixed := qa&^ops.VMAQuirksConfig | qb&ops.VMAQuirksConfig
	for _, c := range []struct {
		facts ops.Facts
		want  ops.Outcome
	}{
		{p.A.Info.Facts.With(ops.FactVMAQuirks, int64(shownAs(qa, qb))), outs[0]},
		{p.B.Info.Facts.With(ops.FactVMAQuirks, int64(shownAs(qb, qa))), outs[1]},
		{p.A.Info.Facts.With(ops.FactVMAQuirks, int64(shownAs(mixed, qa))), outs[1]},
	} {
		j := *p.Judge
		j.Config.Facts = c.facts
		out, err := execSide(ctx, j, [][]ops.Op{script}, nil)
		if err != nil || p.verdict(script, c.want, out[0], false).Div != nil {
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
		var parts []string
		if only := qa &^ qb & ops.VMAQuirksConfig; only != 0 {
			parts = append(parts, only.String()+" on A only")
		}
		if only := qb &^ qa & ops.VMAQuirksConfig; only != 0 {
			parts = append(parts, only.String()+" on B only")
		}
		c.configKnown = &corpus.KnownEntry{
			File: "(the sides' facts)", Pattern: c.pair.Subsystem + "/*", Range: "any", Commit: "-",
			Reason: "the machines' configurations differ (" + strings.Join(parts, ", ") + "): the optimized model given each side's facts gives its results, and A's kernel configured as B's does what B's does",
		}
	}
	return c.configKnown
}
