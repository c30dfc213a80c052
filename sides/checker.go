package sides

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// Checker is a merge's view of this build (corpus.Checker): which
// scripts still fit it, and replays on their recorded pairs, each side
// opened once (Open) and kept until Close.
type Checker struct {
	// Options open the sides.
	Options Options
	// Relations are the relations a subsystem of the registry is
	// compared under (an error for one it does not have).
	Relations func(subsystem string) ([]equiv.Relation, error)
	sides     map[string]runner.Side
}

// Close closes every side the checker opened.
func (r *Checker) Close() {
	for _, s := range r.sides {
		_ = s.Impl.Close()
	}
}

// Stale implements corpus.Checker: a file that is no finding, of a
// subsystem or relation the registry does not have, or whose sides
// cannot run here, is stale.
func (r *Checker) Stale(c *corpus.Candidate) string {
	h := c.Header
	if !h.IsFinding() || h.A == "" || h.B == "" {
		return "no recorded pair to replay it on (not a finding file)"
	}
	rels, err := r.Relations(c.Script.Subsystem)
	if err != nil {
		return err.Error()
	}
	sub := c.Script.Subsystem
	rel, err := equiv.Parse(h.Relation)
	if err != nil || !slices.Contains(rels, rel) {
		return fmt.Sprintf("subsystem %s is not compared under %q", sub, h.Relation)
	}
	for _, spec := range []string{h.A, h.B} {
		if why := unavailable(spec, sub); why != "" {
			return why
		}
	}
	return ""
}

// Replayers are the built-ins names gives, each replaying a script on a
// fresh in-process instance: what corpus.Minimize replays on.
func Replayers(names []string) ([]corpus.Replayer, error) {
	var rs []corpus.Replayer
	for _, n := range names {
		b, err := impls.Lookup(n)
		if err != nil {
			return nil, err
		}
		rs = append(rs, corpus.Replayer{Name: n, Subsystems: b.Subsystems(), Replay: func(sc *ops.Script) (ops.Outcome, error) {
			m, _, err := b.Start()
			if err != nil {
				return ops.Outcome{}, err
			}
			defer m.Close()
			return ops.Run(m, ops.Config{}, sc.Ops())
		}})
	}
	return rs, nil
}

// unavailable says why spec cannot run subsystem sub here, or "".
func unavailable(spec, sub string) string {
	name, _, err := ops.ParseImplName(spec)
	if err != nil {
		return err.Error()
	}
	if strings.ContainsRune(name, '/') {
		if _, err := os.Stat(name); err != nil {
			return fmt.Sprintf("plugin %s is not here", name)
		}
		return ""
	}
	b, err := impls.Lookup(name)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(b.Subsystems(), sub) {
		return fmt.Sprintf("%s no longer runs subsystem %s", name, sub)
	}
	return ""
}

// side opens spec once.
func (r *Checker) side(ctx context.Context, spec string) (runner.Side, error) {
	if s, ok := r.sides[spec]; ok {
		return s, nil
	}
	s, err := Open(context.WithoutCancel(ctx), spec, r.Options)
	if err != nil {
		return s, fmt.Errorf("opening %s: %w", spec, err)
	}
	if r.sides == nil {
		r.sides = map[string]runner.Side{}
	}
	r.sides[spec] = s
	return s, nil
}

// Reproduce implements corpus.Checker: a divergence reproduces when the
// pair diverges again (its signature is recomputed), a plugin failure when
// a side fails again.
func (r *Checker) Reproduce(ctx context.Context, c *corpus.Candidate, tries int) (corpus.Verdict, error) {
	v := corpus.Verdict{Tries: tries}
	a, err := r.side(ctx, c.Header.A)
	if err != nil {
		return v, err
	}
	b, err := r.side(ctx, c.Header.B)
	if err != nil {
		return v, err
	}
	p, err := runner.NewPair(ctx, a, b, c.Script.Subsystem, equiv.Relation(c.Header.Relation))
	if err != nil {
		return v, err
	}
	for range tries {
		if sig, ok := replayOnce(ctx, p, c); ok {
			v.Reproduced++
			v.Signature = sig
		}
	}
	return v, nil
}

// replayOnce runs a finding's script once on its pair and reports whether
// the finding showed again, with the divergence's signature. A side that
// failed is restarted for the next try.
func replayOnce(ctx context.Context, p *runner.Pair, c *corpus.Candidate) (string, bool) {
	script := c.Script.Ops()
	v, err := p.CheckOne(ctx, script)
	if err != nil {
		_ = p.Restart(context.WithoutCancel(ctx), err) // a side that cannot come back fails its next replay
	}
	failed := err != nil
	if c.Header.Kind == "plugin failure" || failed {
		return c.Header.Signature, failed && c.Header.Kind == "plugin failure"
	}
	if !v.Diverged() {
		return "", false
	}
	return p.Signature(script, v), true
}

// Replayers are the implementations names gives, for corpus.Minimize: a
// built-in one replays in process on a fresh instance per script (as
// Replayers), any other side is opened (a plugin, a kernel in a guest) and
// runs each script on a fresh state with kernel coverage asked for, whose
// program counters count as features. closeAll closes what was opened.
func (f *Flags) Replayers(ctx context.Context, names []string) (rs []corpus.Replayer, closeAll func(), err error) {
	var opened []runner.Side
	closeAll = func() {
		for _, s := range slices.Backward(opened) {
			_ = s.Impl.Close()
		}
	}
	for _, n := range names {
		if r, err := Replayers([]string{n}); err == nil {
			rs = append(rs, r...)
			continue
		}
		s, err := f.Open(context.WithoutCancel(ctx), n)
		if err != nil {
			return nil, closeAll, err
		}
		opened = append(opened, s)
		rs = append(rs, corpus.Replayer{Name: s.Name, Subsystems: s.Info.Subsystems, Replay: func(sc *ops.Script) (ops.Outcome, error) {
			cfg := s.Config
			cfg.Observe.Cover = true
			outs, err := s.Impl.Exec(ctx, cfg, [][]ops.Op{sc.Ops()}, nil)
			if err == nil && len(outs) != 1 {
				err = fmt.Errorf("%s returned %d outcomes for 1 script", s.Name, len(outs))
			}
			if err != nil {
				return ops.Outcome{}, err
			}
			return outs[0], nil
		}})
	}
	return rs, closeAll, nil
}
