// Package perf decides whether one implementation's cost grows faster than
// another's on a script: the performance findings of `ipcfuzz compare
// --perf`. The repeatable parts of a script (an operation repeated n times
// before a later one, which is measured) are cut into patterns
// (ops.Pattern), each measured on both sides at several sizes through the
// Measure path of the complexity engine (worst.Measure) and fitted; B is
// slower when the lower end of the interval of its exponent exceeds the
// upper end of A's by more than a threshold: a verdict the intervals
// support, never a point estimate alone.
//
// What is found is minimised like a divergence (every operation whose
// removal keeps the verdict goes) and written like one: a file of its own,
// atomically, never replacing another, with the header lines of a finding
// file (corpus.Finding's format 2) and the table of both sides' costs.
package perf

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
)

// Defaults of a perf comparison.
const (
	// DefaultThreshold is the growth of B's cost over A's that is
	// reported: above the n^0.33 a logarithm shows over 8..64, below a
	// power of n.
	DefaultThreshold = 0.5
	// DefaultSizes are the sizes every cut is measured at: small, so that
	// a script costs little; a model's counters are exact at any size.
	DefaultSizes = "8,16,32,64"
	// MaxCuts bounds the patterns cut from one script.
	MaxCuts = 96
	// MaxGap bounds how far after the repeated operation the measured one
	// may come in the script.
	MaxGap = 6
	// MinimizeBudget bounds the verdicts the minimisation asks for.
	MinimizeBudget = 120
)

// Options configure a comparison.
type Options struct {
	// A and B are the two sides: B is reported when it grows faster.
	A, B complexity.Subject
	// Metric is a counter's name, a ratio "a/b", "" for each side's
	// primary counter, or worst.Wall.
	Metric string
	// Sizes are the sizes every pattern is measured at (at least 3).
	Sizes []int
	// Reps are the repetitions per size (worst.Wall only).
	Reps int
	// Threshold is how much faster B's exponent must grow than A's.
	Threshold float64
}

// Verdict is the judgement of one pattern.
type Verdict struct {
	Pattern ops.Pattern
	// A and B are each side's growth (a side whose metric is 0 at every
	// size grows n^0 [0, 0]).
	A, B complexity.Fit
	// Excess is the lower end of B's interval less the upper end of A's.
	Excess float64
	// Slower: Excess exceeds the threshold.
	Slower bool
	// Invalid says why the pattern has no verdict ("" when it has one).
	Invalid string
}

// String says what the verdict is.
func (v Verdict) String() string {
	if v.Invalid != "" {
		return "no verdict: " + v.Invalid
	}
	return fmt.Sprintf("B %s against A %s: B faster by at least n^%.2f", v.B, v.A, v.Excess)
}

// Judge measures p on both sides and judges it. A side that fails on the
// pattern, or whose metric is 0 at some sizes only, makes it invalid; an
// ended context is an error.
func Judge(ctx context.Context, o Options, p ops.Pattern) (Verdict, error) {
	v := Verdict{Pattern: p}
	fits := [2]complexity.Fit{}
	for i, s := range []complexity.Subject{o.A, o.B} {
		sc, err := worst.Measure(ctx, worst.Options{A: s, Metric: o.Metric, Sizes: o.Sizes, Reps: max(o.Reps, 1)}, p)
		if err != nil {
			return v, err
		}
		switch {
		case sc.Invalid == "":
			fits[i] = sc.Fit
		case len(sc.A) == len(o.Sizes) && allZero(sc.A):
			fits[i] = complexity.Fit{Class: complexity.ClassConst}
		default:
			v.Invalid = sc.Invalid
			return v, nil
		}
	}
	v.A, v.B = fits[0], fits[1]
	v.Excess = v.B.CI[0] - v.A.CI[1]
	v.Slower = v.Excess > o.Threshold
	return v, nil
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Cuts are the patterns a script's repeatable parts make, each at most
// once: an operation repeated n times (the body), then a later one within
// MaxGap (the measured tail), the operations before the body as the setup
// (at most worst.MaxSetup, the last ones). Operations between the body and
// the tail are left out; a handle they bound is taken by the last object
// bound instead (worst.Normalize). Cuts that cannot be measured at the
// largest size go; at most MaxCuts, the nearest pairs first.
func Cuts(subsystem string, script []ops.Op, largest int) []ops.Pattern {
	var out []ops.Pattern
	seen := map[string]bool{}
	for gap := 1; gap <= MaxGap; gap++ {
		for i := 0; i+gap < len(script); i++ {
			p := ops.Pattern{Subsystem: subsystem,
				Setup: slices.Clone(script[max(0, i-worst.MaxSetup):i]),
				Body:  []ops.Op{script[i]},
				Tail:  []ops.Op{script[i+gap]}}
			p = worst.Normalize(p)
			if len(p.Body) == 0 || len(p.Tail) == 0 || !worst.Fits(p, largest) {
				continue
			}
			text := ops.FormatPattern(p)
			if seen[text] {
				continue
			}
			seen[text] = true
			out = append(out, p)
			if len(out) == MaxCuts {
				return out
			}
		}
	}
	return out
}

// Signature names what a verdict found: the subsystem, then the kinds of
// the repeated operations and of the measured ones
// ("shm/perf:get:list").
func Signature(p ops.Pattern) string {
	kinds := func(sec []ops.Op) string {
		var names []string
		for _, op := range sec {
			names = append(names, op.Kind.String())
		}
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s/perf:%s:%s", p.Subsystem, kinds(p.Body), kinds(p.Tail))
}

// Minimize removes, one at a time and from the tail backwards, every
// operation whose removal keeps the pattern valid and B slower, then makes
// each remaining argument plainer (ops.Plainer: lower sizes, types,
// counts, flags cleared) where B stays slower, as the shrinker does a
// divergence; it asks for at most MinimizeBudget verdicts. It returns the
// smallest verdict and how many operations went.
func Minimize(ctx context.Context, o Options, v Verdict) (Verdict, int, error) {
	best, removed, err := remove(ctx, o, v)
	if err != nil {
		return best, removed, err
	}
	best, err = plainer(ctx, o, best, MinimizeBudget)
	return best, removed, err
}

// plainer makes the pattern's arguments plainer, one at a time, while B
// stays slower; at most budget verdicts.
func plainer(ctx context.Context, o Options, best Verdict, budget int) (Verdict, error) {
	largest := o.Sizes[len(o.Sizes)-1]
	for changed := true; changed && budget > 0; {
		changed = false
		secs := best.Pattern.Sections()
		for sec := 0; sec < 3 && !changed; sec++ {
			for i := 0; i < len(secs[sec]) && !changed && budget > 0; i++ {
				for _, op := range ops.Plainer(secs[sec][i].Op) {
					next := best.Pattern.Sections()
					next[sec] = slices.Clone(next[sec])
					next[sec][i].Op = op
					q := ops.NewPattern(best.Pattern.Subsystem, next)
					text := ops.FormatPattern(q)
					if parsed, err := ops.ParsePatternString(text); err != nil || ops.FormatPattern(parsed) != text || !worst.Fits(q, largest) {
						continue
					}
					if budget--; budget < 0 {
						break
					}
					w, err := Judge(ctx, o, q)
					if err != nil {
						return best, err
					}
					if w.Invalid == "" && w.Slower {
						best, changed = w, true
						break
					}
				}
			}
		}
	}
	return best, nil
}

// remove takes out every operation it can, one at a time.
func remove(ctx context.Context, o Options, v Verdict) (Verdict, int, error) {
	best, removed, spent := v, 0, 0
	largest := o.Sizes[len(o.Sizes)-1]
	for changed := true; changed && spent < MinimizeBudget; {
		changed = false
		secs := [][]ops.Op{best.Pattern.Setup, best.Pattern.Body, best.Pattern.Tail}
		for sec := 2; sec >= 0 && !changed && spent < MinimizeBudget; sec-- {
			for i := len(secs[sec]) - 1; i >= 0 && spent < MinimizeBudget; i-- {
				q := without(best.Pattern, sec, i)
				if q.Check() != nil {
					continue
				}
				q = worst.Normalize(q)
				if !worst.Fits(q, largest) || size(q) >= size(best.Pattern) {
					continue
				}
				spent++
				w, err := Judge(ctx, o, q)
				if err != nil {
					return best, removed, err
				}
				if w.Invalid == "" && w.Slower {
					removed += size(best.Pattern) - size(q)
					best, changed = w, true
					break
				}
			}
		}
	}
	return best, removed, nil
}

func size(p ops.Pattern) int { return len(p.Setup) + len(p.Body) + len(p.Tail) }

func without(p ops.Pattern, sec, i int) ops.Pattern {
	secs := p.Sections()
	secs[sec] = slices.Delete(slices.Clone(secs[sec]), i, i+1)
	return ops.NewPattern(p.Subsystem, secs)
}

// Check validates the options.
func (o Options) Check() error {
	switch {
	case len(o.Sizes) < 3:
		return fmt.Errorf("perf: %d sizes, want at least 3", len(o.Sizes))
	case o.Threshold < 0 || math.IsNaN(o.Threshold) || o.Threshold > 4:
		return fmt.Errorf("perf: threshold %v, want 0..4", o.Threshold)
	case o.Reps < 1 || o.Reps > 1000:
		return fmt.Errorf("perf: %d repetitions, want 1..1000", o.Reps)
	}
	return nil
}
