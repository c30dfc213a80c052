package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Side is one implementation under comparison.
type Side struct {
	Name   string // as the user wrote it, e.g. "naive:alloc=legacy"
	Impl   ops.Impl
	Config ops.Config // handed to every Reset
	// Info is what the implementation says of itself; NewPair reads it
	// when the side has none yet.
	Info ops.Info
	// Follows: where an operation may end in several allowed ways, this
	// side takes the other side's way; it runs after the other one.
	// NewPair decides it.
	Follows bool
}

// Pair is the one way two implementations are compared: every driver (the
// fuzzing loop of Run, replay, the rapid state machine, the gopter
// commands, go test -fuzz, the corpus merge) runs scripts on both sides
// through it, and it alone decides who follows, compares under the
// relation, checks the invariant, shrinks and replays.
type Pair struct {
	A, B      Side
	Subsystem string
	Relation  equiv.Relation
	// Invariant, when set, must hold of both final states: a state that
	// breaks it is a divergence of that side.
	Invariant func(ops.Snapshot) error
	// ShrinkTime, when set, bounds the time Shrink spends minimizing (the
	// last run of the shortest script comes after it): go test -fuzz
	// kills a fuzz function that takes ten seconds.
	ShrinkTime time.Duration
	// Judge, when set, is a side that follows (a model), consulted where
	// neither A nor B follows and the subsystem races (a kernel against a
	// kernel): a divergence is a race, not a divergence, when the judge
	// following A's way agrees with A and following B's way agrees with B
	// (both ways are allowed).
	Judge *Side
	// Observed, when set, receives each side's outcomes of every Check
	// (their Observed: what the sides' Config.Observe asked for), before
	// they are compared.
	Observed func(a, b []ops.Outcome)
	// CallTime, when set, receives how long each side's call of every
	// Check took (took: a batch on each side, measured around the call),
	// and how much of it the side spent inside (inside: what a plugin
	// reports of its calls, 0 for a side that reports none). Run sets it
	// to its own totals when it times operations, and clears it otherwise.
	CallTime func(took, inside [2]time.Duration)
}

// serverTimed is an implementation that says how long its calls took
// inside it, summed (a plugin: plugins/host).
type serverTimed interface{ ServerNanos() int64 }

// serverNanos is what s says its calls took inside it so far (0 where it
// does not say).
func serverNanos(s Side) int64 {
	if t, ok := s.Impl.(serverTimed); ok {
		return t.ServerNanos()
	}
	return 0
}

// NewPair builds the pair of a and b for scripts of subsystem compared
// under rel. It reads each side's Info (unless the side has it), refuses a
// side that does not run the subsystem, decides who follows (where the
// subsystem's operations race, B if it can follow, else A if it can) and
// hands each side the machine facts the other reports; a fact a side's
// Config states itself is kept.
func NewPair(ctx context.Context, a, b Side, subsystem string, rel equiv.Relation) (*Pair, error) {
	sides := []*Side{&a, &b}
	for _, s := range sides {
		if s.Info.Name == "" {
			info, err := s.Impl.Info(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: info: %w", s.Name, err)
			}
			s.Info = info
		}
		if !slices.Contains(s.Info.Subsystems, subsystem) {
			return nil, &NotRunError{Side: s.Name, Subsystem: subsystem, Runs: s.Info.Subsystems}
		}
	}
	a.Config.Facts = a.Config.Facts.Over(b.Info.Facts)
	b.Config.Facts = b.Config.Facts.Over(a.Info.Facts)
	races := ops.SubsystemRaces(subsystem)
	b.Follows = races && b.Info.Follows
	a.Follows = races && a.Info.Follows && !b.Follows
	return &Pair{A: a, B: b, Subsystem: subsystem, Relation: rel}, nil
}

// NotRunError is a side that does not run the subsystem a pair needs.
type NotRunError struct {
	Side, Subsystem string
	Runs            []string
}

func (e *NotRunError) Error() string {
	return fmt.Sprintf("%s does not run subsystem %s (it runs %s)", e.Side, e.Subsystem, strings.Join(e.Runs, ", "))
}

// SideErrors is the failure of one or both sides of a pair on a call: the
// error of each side that failed (nil for one that did not).
type SideErrors struct{ A, B error }

func (e *SideErrors) Error() string {
	return errors.Join(e.A, e.B).Error()
}

// Unwrap gives both sides' errors to errors.Is and errors.As.
func (e *SideErrors) Unwrap() []error { return []error{e.A, e.B} }

// sideErrors is nil when neither side failed.
func sideErrors(errA, errB error) error {
	if errA == nil && errB == nil {
		return nil
	}
	return &SideErrors{A: errA, B: errB}
}

// splitErrors returns the error of each side err holds.
func splitErrors(err error) (errA, errB error) {
	var se *SideErrors
	if errors.As(err, &se) {
		return se.A, se.B
	}
	return err, nil
}

// both runs f on each side: at once, or, when one side follows, the other
// first and then the follower with the leader's answer (a follower's f
// gets it; nil otherwise). A follower does not run when its leader failed.
func both[T any](p *Pair, f func(s Side, leader *T) (T, error)) (outA, outB T, errA, errB error) {
	return bothIndexed(p, func(_ int, s Side, leader *T) (T, error) { return f(s, leader) })
}

// bothIndexed is both, telling f which side it runs (0 for A, 1 for B).
func bothIndexed[T any](p *Pair, f func(i int, s Side, leader *T) (T, error)) (outA, outB T, errA, errB error) {
	switch {
	case p.B.Follows:
		if outA, errA = f(0, p.A, nil); errA != nil {
			return
		}
		outB, errB = f(1, p.B, &outA)
		return
	case p.A.Follows:
		if outB, errB = f(1, p.B, nil); errB != nil {
			return
		}
		outA, errA = f(0, p.A, &outB)
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		outB, errB = f(1, p.B, nil)
	}()
	outA, errA = f(0, p.A, nil)
	wg.Wait()
	return
}

// Verdict is one script compared on both sides.
type Verdict struct {
	// Out holds each side's outcome (A, B).
	Out [2]ops.Outcome
	// Same: both sides sent the outcome as the same bytes (Out holds one
	// value twice, equal under every relation).
	Same bool
	// Div is the first divergence (or broken invariant); nil when they agree.
	Div *equiv.Divergence
}

// Diverged reports whether the sides disagreed.
func (v Verdict) Diverged() bool { return v.Div != nil }

// Check runs each script on both sides and compares them: a Verdict per
// script. A side that fails makes the error a *SideErrors; no verdict
// comes back then.
func (p *Pair) Check(ctx context.Context, scripts [][]ops.Op) ([]Verdict, error) {
	outA, outB, same, errA, errB := p.exec(ctx, scripts)
	if err := sideErrors(errA, errB); err != nil {
		return nil, err
	}
	if p.Observed != nil {
		p.Observed(outA, outB)
	}
	vs := make([]Verdict, len(scripts))
	for i, s := range scripts {
		vs[i] = p.verdict(s, outA[i], outB[i], same != nil && same[i])
		if vs[i].Diverged() && p.judges() {
			jd, err := p.judged(ctx, s, outA[i], outB[i])
			if err != nil {
				return nil, fmt.Errorf("judge %s: %w", p.Judge.Name, err)
			}
			vs[i].Div = judgedDivergence(p.Relation, s, vs[i], jd)
		}
	}
	return vs, nil
}

// judges reports whether the pair's divergences go before its judge.
func (p *Pair) judges() bool {
	return p.Judge != nil && p.Judge.Info.Follows && !p.A.Follows && !p.B.Follows && ops.SubsystemRaces(p.Subsystem)
}

// judged runs script on the judge twice, following a's way and b's, and
// returns nil when it agrees with each (both ways are allowed), else the
// first divergence of a side from what the judge allows (the earlier of
// the two; a final state's after every step).
func (p *Pair) judged(ctx context.Context, script []ops.Op, a, b ops.Outcome) (*equiv.Divergence, error) {
	var first *equiv.Divergence
	for _, o := range []ops.Outcome{a, b} {
		out, err := execSide(ctx, *p.Judge, [][]ops.Op{script}, []ops.Outcome{o})
		if err != nil {
			return nil, err
		}
		if d := p.verdict(script, o, out[0], false).Div; d != nil && (first == nil || earlier(d, first)) {
			first = d
		}
	}
	return first, nil
}

// earlier reports whether divergence d comes before e in a script's run
// (a final state's comes after every step's).
func earlier(d, e *equiv.Divergence) bool {
	if d.Step < 0 {
		return false
	}
	return e.Step < 0 || d.Step < e.Step
}

// judgedDivergence is the divergence of a verdict v of script once the
// judge has seen it (jd: where a side first leaves what it allows, nil
// when both ways are): none when both are allowed; where the judge first
// refuses a side, when the sides' results differ there too, since the
// difference before it is a race the judge allows (two kernels that wake
// different senders, one of which then misbehaves, show the misbehaviour,
// not the race); else v's own. Under a relation other than exact the
// results of one step do not compare alone (ids are renamed from the
// start): v's own.
func judgedDivergence(rel equiv.Relation, script []ops.Op, v Verdict, jd *equiv.Divergence) *equiv.Divergence {
	if jd == nil {
		return nil
	}
	if rel != equiv.Exact || !earlier(v.Div, jd) || jd.Step < 0 || jd.Step >= len(script) {
		return v.Div
	}
	ra, rb := v.Out[0].Results, v.Out[1].Results
	if jd.Step >= len(ra) || jd.Step >= len(rb) {
		return v.Div
	}
	op := script[jd.Step]
	if equiv.SameResult(op, ra[jd.Step], rb[jd.Step]) {
		return v.Div
	}
	return &equiv.Divergence{Step: jd.Step, Reason: fmt.Sprintf("%s: A -> %s, B -> %s (the difference at step %d is a race the judge allows)",
		ops.FormatOp(op), ops.FormatResult(op, ra[jd.Step]), ops.FormatResult(op, rb[jd.Step]), v.Div.Step+1)}
}

// CheckOne is Check of one script.
func (p *Pair) CheckOne(ctx context.Context, script []ops.Op) (Verdict, error) {
	vs, err := p.Check(ctx, [][]ops.Op{script})
	if err != nil {
		return Verdict{}, err
	}
	return vs[0], nil
}

// verdict compares two outcomes of script: the invariant of each final
// state first, then the outcomes under the relation (unless both sides
// sent the same bytes).
func (p *Pair) verdict(script []ops.Op, a, b ops.Outcome, same bool) Verdict {
	v := Verdict{Out: [2]ops.Outcome{a, b}, Same: same}
	if v.Div = p.broken(a.Snapshot, b.Snapshot, same); v.Div == nil && !same {
		v.Div = equiv.Compare(p.Relation, script, a, b)
	}
	return v
}

// broken is the divergence of a final state that breaks the invariant
// (A's first; same: they are one value), or nil.
func (p *Pair) broken(a, b ops.Snapshot, same bool) *equiv.Divergence {
	if p.Invariant == nil {
		return nil
	}
	for i, s := range []Side{p.A, p.B} {
		if err := p.Invariant([]ops.Snapshot{a, b}[i]); err != nil {
			return &equiv.Divergence{Step: -1, Reason: fmt.Sprintf("invariant: %s: %v", s.Name, err)}
		}
		if same {
			break
		}
	}
	return nil
}

// Signature is the signature of a divergent verdict of script
// (Signature).
func (p *Pair) Signature(script []ops.Op, v Verdict) string {
	return Signature(p.Subsystem, script, v.Out, v.Div)
}

// exec runs scripts on both sides. When both are ops.Wire of one layout
// and neither follows, the scripts are packed once for both, and an
// outcome both sides sent as the same bytes is decoded once: same[i] says
// so. Otherwise same is nil.
func (p *Pair) exec(ctx context.Context, scripts [][]ops.Op) (outA, outB []ops.Outcome, same []bool, errA, errB error) {
	var took [2]time.Duration
	if p.CallTime != nil {
		before := [2]int64{serverNanos(p.A), serverNanos(p.B)}
		defer func() {
			if errA == nil && errB == nil {
				inside := [2]time.Duration{time.Duration(serverNanos(p.A) - before[0]), time.Duration(serverNanos(p.B) - before[1])}
				p.CallTime(took, inside)
			}
		}()
	}
	if !p.A.Follows && !p.B.Follows {
		if wa, wb, ok := wires(p.A, p.B); ok {
			return execWire(ctx, p.A, p.B, wa, wb, scripts, &took)
		}
	}
	outA, outB, errA, errB = bothIndexed(p, func(i int, s Side, leader *[]ops.Outcome) ([]ops.Outcome, error) {
		var follow []ops.Outcome
		if leader != nil {
			follow = *leader
		}
		began := time.Now()
		defer func() { took[i] = time.Since(began) }()
		return execSide(ctx, s, scripts, follow)
	})
	return outA, outB, nil, errA, errB
}

// execSide runs scripts on one side and checks it answered for each.
func execSide(ctx context.Context, s Side, scripts [][]ops.Op, follow []ops.Outcome) ([]ops.Outcome, error) {
	out, err := s.Impl.Exec(ctx, s.Config, scripts, follow)
	if err == nil && len(out) != len(scripts) {
		err = fmt.Errorf("%s returned %d outcomes for %d scripts", s.Name, len(out), len(scripts))
	}
	return out, err
}

// Restarter is an Impl that can be replaced by a fresh instance after it
// failed (a plugin that crashed or hung).
type Restarter interface {
	Restart(ctx context.Context) error
}

// restartSide replaces a side's implementation by a fresh one.
func restartSide(ctx context.Context, s Side) error {
	r, ok := s.Impl.(Restarter)
	if !ok {
		return fmt.Errorf("%s cannot be restarted", s.Name)
	}
	return r.Restart(ctx)
}

// Restart replaces the sides whose error err holds (a *SideErrors from
// Check) by fresh instances, so that the next call starts clean.
func (p *Pair) Restart(ctx context.Context, err error) error {
	errA, errB := splitErrors(err)
	var errs []error
	for _, f := range []struct {
		s   Side
		err error
	}{{p.A, errA}, {p.B, errB}} {
		if f.err == nil {
			continue
		}
		if rerr := restartSide(ctx, f.s); rerr != nil {
			errs = append(errs, fmt.Errorf("%s failed (%v) and could not be restarted: %w", f.s.Name, f.err, rerr))
		}
	}
	return errors.Join(errs...)
}

// KernelRelease is the release (uname -r) of the pair's kernel side(s):
// a side whose version reads "Linux RELEASE" (the kernel built-in, or a
// plugin that runs it in a guest); "" when neither is one, both joined by
// a comma when they differ.
func (p *Pair) KernelRelease() string {
	var out []string
	for _, s := range []Side{p.A, p.B} {
		if r := Release(s); r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, ",")
}

// Release is the release (uname -r) of the kernel side s runs, as it says
// of itself ("Linux RELEASE" as its version: the kernel built-in, or a
// guest booted from an image); "" for a model.
func Release(s Side) string {
	r, _ := strings.CutPrefix(s.Info.Version, "Linux ")
	if r == s.Info.Version {
		return ""
	}
	return r
}

// Facts are the machine facts the pair handed to its sides (NewPair).
func (p *Pair) Facts() ops.Facts {
	return p.A.Config.Facts.Over(p.B.Config.Facts)
}

// ConfigDiffers says, where both sides report VMA quirks that their
// configuration or machine decides (ops.VMAQuirksConfig: soft-dirty,
// protection keys, swap, the zero page...) and these differ, which side
// has which, in one line for a finding's notes: a difference they make is
// the machines', not the kernels' versions. "" otherwise.
func (p *Pair) ConfigDiffers() string {
	qa, okA := p.A.Info.Facts.VMAQuirks()
	qb, okB := p.B.Info.Facts.VMAQuirks()
	if !okA || !okB || (qa^qb)&ops.VMAQuirksConfig == 0 {
		return ""
	}
	return "the sides' configurations differ (" + configSides(qa, qb) + "): a difference these make is the machines', not the kernels' versions"
}

// configSides says which configuration quirks (ops.VMAQuirksConfig) only A
// has (qa) and which only B has (qb): "no-zero-page on A only, soft-dirty
// on B only".
func configSides(qa, qb ops.VMAQuirks) string {
	var parts []string
	if only := qa &^ qb & ops.VMAQuirksConfig; only != 0 {
		parts = append(parts, only.String()+" on A only")
	}
	if only := qb &^ qa & ops.VMAQuirksConfig; only != 0 {
		parts = append(parts, only.String()+" on B only")
	}
	return strings.Join(parts, ", ")
}
