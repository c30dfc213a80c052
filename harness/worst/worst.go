// Package worst searches for the script pattern whose cost grows fastest:
// on one implementation, or against another (the growth of the ratio of
// their costs). A pattern (ops.Pattern) is a setup, a body repeated n times
// and a measured tail; the search draws operations from a subsystem's
// generator, cuts them into patterns, mutates their operations and
// arguments, measures each candidate inside the implementations at several
// sizes (the Measure path of the complexity engine) and fits its growth.
// The steepest one is then minimised: every operation whose removal keeps
// the growth goes.
//
// The ideas are Singularity's (FSE 2018: search for an input pattern that
// scales, not for one input) with the cost of SlowFuzz and PerfFuzz
// (counted work); what is new is the second implementation.
//
// The search is deterministic for a seed: the candidates come from one
// generator seeded with it, and the models' counters are deterministic, so
// the same seed gives the same pattern unless the budget of time cuts the
// search short (Result.CutShort says so).
package worst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/shrink"
)

// Wall is the metric of wall time measured inside the implementation.
const Wall = "wall"

// MetricLabel names a metric for people: "primary counter" for "" (each
// side's own), else the metric as given.
func MetricLabel(m string) string {
	if m == "" {
		return "primary counter"
	}
	return m
}

// Options configure a search.
type Options struct {
	// Subsystem is the subsystem of the patterns.
	Subsystem string
	// Draw returns a script of the subsystem drawn from its generator with
	// seed: the operations candidates are made of.
	Draw func(seed uint64) []ops.Op
	// A is the implementation searched; B, when set, the one it is held
	// against (the cost is then A's over B's).
	A complexity.Subject
	B *complexity.Subject
	// Metric is a counter's name, a ratio "a/b" of two counters, "" for
	// each implementation's primary counter, or Wall.
	Metric string
	// Sizes are the sizes every candidate is measured at.
	Sizes []int
	// Reps are the repetitions per size (Wall only; a counter is
	// measured once, it is deterministic).
	Reps int
	// Candidates bounds the candidates measured in the search (the
	// minimisation measures at most MinimizeBudget more).
	Candidates int
	// Budget bounds the wall time of the whole search, minimisation
	// included.
	Budget time.Duration
	// Seed seeds the search.
	Seed uint64
	// Progress, when set, receives a line per improvement.
	Progress io.Writer
}

// Defaults of a search.
const (
	DefaultCandidates = 600
	// MinimizeBudget bounds the candidates the minimisation measures.
	MinimizeBudget = 120
	// MaxCandidates bounds Options.Candidates.
	MaxCandidates = 100000
	// MaxBody bounds the operations of a candidate's body, MaxSetup and
	// MaxTail those of its setup and tail.
	MaxBody, MaxSetup, MaxTail = 4, 8, 4
	// MaxWork bounds a candidate's work at the largest size (ops.Cost of
	// the setup, of the body n times and of the tail): what keeps one
	// measurement short, so that the budget of time is kept.
	MaxWork        = 1 << 15
	populationSize = 12
	poolScripts    = 24
)

// Score is what one candidate costs: the growth of its metric (or of the
// ratio A/B) over the sizes, and the value at the largest size.
type Score struct {
	Fit complexity.Fit `json:"fit"`
	// Sizes are the sizes it was measured at: the search's, or fewer and
	// smaller ones where the pattern's body allows no more (SizesFor).
	Sizes []int `json:"sizes"`
	// Last is the metric per tail operation at the largest size (the ratio
	// with B).
	Last float64 `json:"last"`
	// A and B are each side's metric per tail operation at each size.
	A []float64 `json:"a"`
	B []float64 `json:"b,omitempty"`
	// Invalid says why the candidate has no score (a side failed, or its
	// metric is zero or missing at some size); "" when it has one.
	Invalid string `json:"invalid,omitempty"`
	// Note says how the score was reached where it is not plain (B
	// counting 0 at every size: the growth is A's own).
	Note string `json:"note,omitempty"`
}

// SizesFor are the sizes p is measured at: those of sizes it takes
// (ops.Pattern.MaxN), or, when fewer than 3 remain, a ladder of powers of
// two up to its largest n (2, 4, 8, 15 for a body of task=t$i with 15
// tasks); nil when it takes fewer than 3 sizes.
func SizesFor(p ops.Pattern, sizes []int) []int {
	maxN := p.MaxN()
	var out []int
	for _, n := range sizes {
		if n <= maxN {
			out = append(out, n)
		}
	}
	if len(out) >= 3 {
		return out
	}
	if maxN < 3 {
		return nil
	}
	out = nil
	for n := 2; n < maxN; n *= 2 {
		out = append(out, n)
	}
	out = append(out, maxN)
	if len(out) < 3 {
		out = []int{maxN - 2, maxN - 1, maxN}
	}
	return out
}

// key is what the search maximises: the lower end of the growth's
// interval, so that the search prefers what the measurements support (a
// counter that is a clean power of n has an interval of no width; one
// that jumps between sizes, or wall time, a wide one).
func (s Score) key() float64 {
	if s.Invalid != "" || !s.Fit.Fitted() {
		return math.Inf(-1)
	}
	return s.Fit.CI[0]
}

// Candidate is a pattern with its score.
type Candidate struct {
	Pattern ops.Pattern
	Score   Score
}

// Result is what a search found.
type Result struct {
	// Best is the minimised pattern with the steepest growth, with its
	// score; Found is false when no candidate had a score.
	Best  Candidate
	Found bool
	// Evaluated candidates, of which Invalid had no score.
	Evaluated, Invalid int
	// Removed is how many operations the minimisation removed.
	Removed int
	// CutShort: the budget of time (or the caller's context) ended the
	// search before Candidates.
	CutShort bool
	Seconds  float64
}

// Search runs the search.
func Search(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	s := &search{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), vrng: rand.New(rand.NewPCG(o.Seed^0x5bd1e995, o.Seed)),
		res: &Result{}, seen: map[string]Score{}}
	s.fillPool()
	err := s.evolve(ctx)
	if err == nil && s.best != nil {
		err = s.minimize(ctx)
	}
	s.res.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The budget, or the caller, ended it: what was found so far stands.
		s.res.CutShort, err = true, nil
	}
	if err != nil {
		return nil, err
	}
	if s.best != nil {
		s.res.Best, s.res.Found = *s.best, true
	}
	return s.res, nil
}

func (o Options) check() error {
	switch {
	case o.Draw == nil:
		return errors.New("worst: no generator")
	case len(o.Sizes) < 3:
		return fmt.Errorf("worst: %d sizes, want at least 3", len(o.Sizes))
	case o.Candidates < 1 || o.Candidates > MaxCandidates:
		return fmt.Errorf("worst: %d candidates, want 1..%d", o.Candidates, MaxCandidates)
	case o.Budget <= 0:
		return errors.New("worst: no budget of time")
	case o.Reps < 1 || o.Reps > 1000:
		return fmt.Errorf("worst: %d repetitions, want 1..1000", o.Reps)
	}
	return nil
}

type search struct {
	o   Options
	rng *rand.Rand
	// vrng draws the sleepers of cuts (sleepers).
	vrng *rand.Rand
	res  *Result
	pool [][]ops.Op
	// population holds the best candidates so far, best first.
	population []Candidate
	best       *Candidate
	seen       map[string]Score
}

// fillPool draws the scripts whose operations candidates are cut from.
// A script that works in the THP area is left out: the area is a fixed
// 1024 pages, no space a pattern grows with $i, and such a script's other
// operations are mostly the heap area's.
func (s *search) fillPool() {
	for range poolScripts {
		sc := s.o.Draw(s.rng.Uint64())
		if len(sc) > 0 && !slices.ContainsFunc(sc, func(op ops.Op) bool { return op.VMA.THP }) {
			s.pool = append(s.pool, sc)
		}
	}
}

// evolve measures the first candidates cut from drawn scripts, then
// mutants of the best ones, until Candidates were measured.
func (s *search) evolve(ctx context.Context) error {
	if len(s.pool) == 0 {
		return errors.New("worst: the generator drew no operations")
	}
	for tries := 0; s.res.Evaluated < s.o.Candidates && tries < 50*s.o.Candidates; tries++ {
		var p ops.Pattern
		if len(s.population) < populationSize || s.rng.IntN(5) == 0 {
			p = s.cut()
		} else {
			parent := s.population[s.rng.IntN(min(len(s.population), 4))]
			p = s.mutate(parent.Pattern)
		}
		p = normalize(p)
		if !s.fits(p) {
			continue
		}
		c, err := s.measure(ctx, p)
		if err != nil {
			return err
		}
		s.offer(c)
	}
	return nil
}

// fits reports whether p is a valid pattern whose work at the largest
// size is within MaxWork.
func (s *search) fits(p ops.Pattern) bool {
	if p.Check() != nil {
		return false
	}
	sizes := SizesFor(p, s.o.Sizes)
	if sizes == nil {
		return false
	}
	n := int64(sizes[len(sizes)-1])
	return ops.Cost(p.Setup)+n*ops.Cost(p.Body)+ops.Cost(p.Tail) <= MaxWork
}

// offer keeps c in the population if it is among the best.
func (s *search) offer(c Candidate) {
	if c.Score.Invalid != "" {
		return
	}
	i := sort.Search(len(s.population), func(i int) bool { return s.better(c, s.population[i]) })
	s.population = slices.Insert(s.population, i, c)
	if len(s.population) > populationSize {
		s.population = s.population[:populationSize]
	}
	if s.best == nil || s.better(c, *s.best) {
		s.best = &c
		if s.o.Progress != nil {
			fmt.Fprintf(s.o.Progress, "ipcfuzz: worst: candidate %d: %s, body %s\n", s.res.Evaluated, c.Score.Fit, bodyText(c.Pattern))
		}
	}
}

// better orders candidates: the steeper growth, then the higher cost at
// the largest size, then the shorter pattern, then the text (so that the
// order never depends on the order of discovery).
func (s *search) better(a, b Candidate) bool {
	ka, kb := a.Score.key(), b.Score.key()
	if math.Abs(ka-kb) > 1e-9 {
		return ka > kb
	}
	if la, lb := a.Score.Last, b.Score.Last; math.Abs(la-lb) > 1e-9*math.Max(math.Abs(la), math.Abs(lb)) {
		return la > lb
	}
	if na, nb := size(a.Pattern), size(b.Pattern); na != nb {
		return na < nb
	}
	return ops.FormatPattern(a.Pattern) < ops.FormatPattern(b.Pattern)
}

func size(p ops.Pattern) int { return len(p.Setup) + len(p.Body) + len(p.Tail) }

func bodyText(p ops.Pattern) string {
	var parts []string
	for i, op := range p.Body {
		parts = append(parts, ops.FormatVaried(op, p.VaryOf(i)))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// cut makes a candidate from a drawn script: a setup, a body and a tail
// that follow one another in it, so that every handle is bound before use.
func (s *search) cut() ops.Pattern {
	sc := s.pool[s.rng.IntN(len(s.pool))]
	i := s.rng.IntN(len(sc))
	setup := s.rng.IntN(min(i, MaxSetup) + 1)
	body := 1 + s.rng.IntN(MaxBody)
	tail := 1 + s.rng.IntN(MaxTail)
	j := min(i+body, len(sc))
	k := min(j+tail, len(sc))
	p := ops.Pattern{Subsystem: s.o.Subsystem,
		Setup: slices.Clone(sc[i-setup : i]), Body: slices.Clone(sc[i:j]), Tail: slices.Clone(sc[j:k])}
	if len(p.Tail) == 0 && len(p.Body) > 1 {
		p.Tail, p.Body = p.Body[len(p.Body)-1:], p.Body[:len(p.Body)-1]
	}
	return s.sleepers(p)
}

// sleepers has, in one cut of two, a body operation that may block (one
// that races, by a task other than t0) issued by task ti in repetition i:
// n tasks asleep, the state a per-task limit keeps a fixed body from
// building. Its own random stream, so that the cuts of the subsystems
// whose operations never block are the same as without it.
func (s *search) sleepers(p ops.Pattern) ops.Pattern {
	if s.vrng.IntN(2) == 0 {
		return p
	}
	secs := p.Sections()
	var can []int
	for i, po := range secs[1] {
		if spec := ops.Spec(po.Op.Kind); spec != nil && spec.Races && spec.Task && po.Op.Task != 0 {
			can = append(can, i)
		}
	}
	if len(can) == 0 {
		return p
	}
	i := can[s.vrng.IntN(len(can))]
	secs[1][i].Vary.Task, secs[1][i].Op.Task = true, 1
	return ops.NewPattern(p.Subsystem, secs)
}

// mutate changes one thing of p: an operation replaced by a drawn one (of
// the same kind, which changes its arguments, or of any kind), inserted,
// removed, duplicated, moved to the next or previous section, or copied
// from the body or tail into the setup (to prepare the state a later one
// works on: a heap for a brk to grow).
func (s *search) mutate(p ops.Pattern) ops.Pattern {
	secs := p.Sections()
	for i := range secs {
		secs[i] = slices.Clone(secs[i])
	}
	limits := []int{MaxSetup, MaxBody, MaxTail}
	sec := s.rng.IntN(3)
	list := secs[sec]
	item := func(op ops.Op) ops.PatternOp { return ops.PatternOp{Op: op} }
	switch s.rng.IntN(8) {
	case 0, 1: // replace, by an operation of the same kind when the pool has one
		if len(list) > 0 {
			i := s.rng.IntN(len(list))
			list[i] = item(s.drawLike(list[i].Op, s.rng.IntN(3) > 0))
		}
	case 2: // insert
		if len(list) < limits[sec] {
			i := s.rng.IntN(len(list) + 1)
			list = slices.Insert(list, i, item(s.drawOp()))
		}
	case 3: // remove
		if len(list) > 0 {
			i := s.rng.IntN(len(list))
			list = slices.Delete(list, i, i+1)
		}
	case 4: // duplicate
		if len(list) > 0 && len(list) < limits[sec] {
			i := s.rng.IntN(len(list))
			op := list[i]
			op.Op.Bind = 0
			list = slices.Insert(list, i+1, op)
		}
	case 6: // prepare: a copy of a later operation at the end of the setup
		from := secs[1+s.rng.IntN(2)]
		if len(from) > 0 && len(secs[0]) < limits[0] {
			op := from[s.rng.IntN(len(from))].Op
			op.Bind = 0
			secs[0] = append(secs[0], item(op))
		}
	case 5: // move across a section boundary
		switch {
		case sec < 2 && len(list) > 0 && len(secs[sec+1]) < limits[sec+1]:
			secs[sec+1] = slices.Insert(secs[sec+1], 0, list[len(list)-1])
			list = list[:len(list)-1]
		case sec > 0 && len(list) > 0 && len(secs[sec-1]) < limits[sec-1]:
			secs[sec-1] = append(secs[sec-1], list[0])
			list = list[1:]
		}
	case 7: // vary a body operation from one repetition to the next
		sec, list = 1, secs[1]
		if len(list) > 0 {
			i := s.rng.IntN(len(list))
			list[i] = s.vary(list[i])
		}
	}
	secs[sec] = list
	return ops.NewPattern(p.Subsystem, secs)
}

// vary changes how a body operation changes from one repetition to the
// next: its window pages move by $i (n VMAs), or repetition i is issued by
// task ti (n sleepers), or it varies no more.
func (s *search) vary(po ops.PatternOp) ops.PatternOp {
	spec := ops.Spec(po.Op.Kind)
	switch {
	case !po.Vary.IsZero() && s.rng.IntN(3) == 0:
		po.Vary = ops.Vary{}
	case ops.HasRange(po.Op.Kind) && po.Op.VMA.Region() == ops.RegionWindow:
		po.Vary.Page = 1 + s.rng.Int64N(4)
	case spec != nil && spec.Task:
		po.Vary.Task = true
		po.Op.Task = 1
	}
	return po
}

func (s *search) drawOp() ops.Op {
	sc := s.pool[s.rng.IntN(len(s.pool))]
	return sc[s.rng.IntN(len(sc))]
}

// drawLike draws an operation of op's kind (other arguments) when sameKind
// and the pool has one, else any operation.
func (s *search) drawLike(op ops.Op, sameKind bool) ops.Op {
	if !sameKind {
		return s.drawOp()
	}
	var like []ops.Op
	for _, sc := range s.pool {
		for _, o := range sc {
			if o.Kind == op.Kind {
				like = append(like, o)
			}
		}
	}
	if len(like) == 0 {
		return s.drawOp()
	}
	return like[s.rng.IntN(len(like))]
}

// normalize makes p a valid pattern: an operation that uses a handle no
// earlier operation binds refers to the last object handle bound instead
// (or goes, for attachments and files), and handles and tasks are
// numbered in order (shrink.Renumber), the sections keeping their lengths.
func normalize(p ops.Pattern) ops.Pattern {
	bound := map[ops.Class][]int{}
	var all []ops.Op
	var varies []ops.Vary
	var lens [3]int
	for i, sec := range p.Sections() {
		for _, po := range sec {
			op := po.Op
			ok := true
			op = ops.RenumberHandles(op, func(c ops.Class, n int) int {
				if slices.Contains(bound[c], n) {
					return n
				}
				if c == ops.ClassObject && len(bound[c]) > 0 {
					return bound[c][len(bound[c])-1]
				}
				ok = ok && c == ops.ClassObject
				return 0
			})
			if !ok {
				continue
			}
			if spec := ops.Spec(op.Kind); op.Bind > 0 && spec != nil {
				if slices.Contains(bound[spec.Binds], op.Bind) {
					// bound twice: a fresh number
					op.Bind = 1000 + len(all)
				}
				bound[spec.Binds] = append(bound[spec.Binds], op.Bind)
			}
			all = append(all, op)
			varies = append(varies, po.Vary)
			lens[i]++
		}
	}
	all = shrink.Renumber(all)
	var secs [3][]ops.PatternOp
	k := 0
	for i, n := range lens {
		for range n {
			po := ops.PatternOp{Op: all[k], Vary: varies[k]}
			if po.Vary.Task {
				po.Op.Task = 1 // the task the text parses with; repetition i is ti
			}
			secs[i] = append(secs[i], po)
			k++
		}
	}
	return ops.NewPattern(p.Subsystem, secs)
}

// measure scores p (once: a pattern measured before keeps its score).
func (s *search) measure(ctx context.Context, p ops.Pattern) (Candidate, error) {
	text := ops.FormatPattern(p)
	if sc, ok := s.seen[text]; ok {
		return Candidate{Pattern: p, Score: sc}, nil
	}
	if err := ctx.Err(); err != nil {
		return Candidate{}, err
	}
	s.res.Evaluated++
	sc, err := Measure(ctx, s.o, p)
	if err != nil {
		return Candidate{}, err
	}
	if sc.Invalid != "" {
		s.res.Invalid++
	}
	s.seen[text] = sc
	return Candidate{Pattern: p, Score: sc}, nil
}

// Measure scores one pattern with the options' sides, metric and sizes. A
// side that fails on the pattern (an implementation error, not an errno)
// makes it invalid; a context that ends is an error.
func Measure(ctx context.Context, o Options, p ops.Pattern) (Score, error) {
	w := ops.PatternWorkload(p)
	reps := 1
	if o.Metric == Wall {
		reps = o.Reps
	}
	var sc Score
	sizes := SizesFor(p, o.Sizes)
	if sizes == nil {
		sc.Invalid = fmt.Sprintf("the pattern takes n <= %d only: fewer than 3 sizes", p.MaxN())
		return sc, nil
	}
	sc.Sizes = sizes
	samples := make([][]float64, len(sizes))
	var aSamples [][]float64
	for i, n := range sizes {
		a, err := value(ctx, o.A, w, n, reps, o.Metric, len(p.Tail))
		if err != nil || a == nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return sc, ctxErr
			}
			return invalid(sc, o.A.Name, err, o.Metric), nil
		}
		sc.A = append(sc.A, complexity.Median(a))
		samples[i] = a
		aSamples = append(aSamples, a)
		if o.B != nil {
			b, err := value(ctx, *o.B, w, n, reps, o.Metric, len(p.Tail))
			if err != nil || b == nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return sc, ctxErr
				}
				return invalid(sc, o.B.Name, err, o.Metric), nil
			}
			sc.B = append(sc.B, complexity.Median(b))
			samples[i] = ratios(a, b)
		}
	}
	if o.B != nil && slices.ContainsFunc(samples, func(v []float64) bool { return v == nil }) {
		if slices.ContainsFunc(sc.B, func(v float64) bool { return v != 0 }) {
			sc.Invalid = fmt.Sprintf("%s's %s is 0 at some sizes only: no ratio", o.B.Name, metricName(o.Metric))
			return sc, nil
		}
		// B does none of that work at any size: a constant, and the
		// growth of the ratio is A's own.
		samples = aSamples
		sc.Note = fmt.Sprintf("%s counts no %s at any size: the growth is %s's own", o.B.Name, metricName(o.Metric), o.A.Name)
	}
	sc.Fit = complexity.FitSeries(sizes, samples)
	if !sc.Fit.Fitted() {
		sc.Invalid = sc.Fit.Note
		return sc, nil
	}
	sc.Last = complexity.Median(samples[len(samples)-1])
	return sc, nil
}

func invalid(sc Score, side string, err error, metric string) Score {
	if err != nil {
		sc.Invalid = fmt.Sprintf("%s: %v", side, err)
	} else {
		sc.Invalid = fmt.Sprintf("%s counts no %s", side, metricName(metric))
	}
	return sc
}

func metricName(m string) string {
	if m == "" {
		return "primary counter"
	}
	return m
}

// value is the metric per tail operation at size n, one per repetition;
// nil when the side does not count it.
func value(ctx context.Context, s complexity.Subject, w ops.Workload, n, reps int, metric string, tail int) ([]float64, error) {
	m, err := s.Impl.Measure(ctx, s.Config, w, n, reps)
	if err != nil {
		return nil, err
	}
	if metric == Wall {
		out := make([]float64, len(m.WallNs))
		for i, ns := range m.WallNs {
			out[i] = float64(ns) / float64(tail)
		}
		return out, nil
	}
	v, ok := Counter(m, metric)
	if !ok {
		return nil, nil
	}
	return []float64{v / float64(tail)}, nil
}

// Counter evaluates a counter expression on a measurement: a counter's
// name, a ratio "a/b" (0 when b is 0), or "" for the primary counter.
func Counter(m ops.Measurement, expr string) (float64, bool) {
	if expr == "" {
		expr = m.Primary
	}
	num, den, ratio := strings.Cut(expr, "/")
	a, ok := m.Counters[num]
	if !ok {
		return 0, false
	}
	if !ratio {
		return float64(a), true
	}
	b, ok := m.Counters[den]
	if !ok {
		return 0, false
	}
	if b == 0 {
		return 0, true
	}
	return float64(a) / float64(b), true
}

// ratios pairs the repetitions of a and b; nil when some b is 0.
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		d := b[min(i, len(b)-1)]
		if d == 0 {
			return nil
		}
		out[i] = a[i] / d
	}
	return out
}

// minimize removes, one at a time and from the tail backwards, every
// operation whose removal keeps the growth (within a tolerance) and the
// pattern valid.
func (s *search) minimize(ctx context.Context) error {
	best := *s.best
	tol := 0.05
	key := best.Score.key()
	spent := 0
	for changed := true; changed; {
		changed = false
		for sec := 2; sec >= 0; sec-- {
			for i := len(section(best.Pattern, sec)) - 1; i >= 0; i-- {
				if spent >= MinimizeBudget {
					s.best = &best
					return nil
				}
				q := without(best.Pattern, sec, i)
				if q.Check() != nil {
					continue
				}
				q = normalize(q)
				if !s.fits(q) || size(q) >= size(best.Pattern) {
					continue
				}
				spent++
				c, err := s.measure(ctx, q)
				if err != nil {
					s.best = &best
					return err
				}
				if c.Score.key() >= key-tol {
					s.res.Removed += size(best.Pattern) - size(q)
					best, changed = c, true
					break
				}
			}
		}
	}
	s.best = &best
	return nil
}

func section(p ops.Pattern, sec int) []ops.Op {
	return [][]ops.Op{p.Setup, p.Body, p.Tail}[sec]
}

func without(p ops.Pattern, sec, i int) ops.Pattern {
	secs := p.Sections()
	secs[sec] = slices.Delete(slices.Clone(secs[sec]), i, i+1)
	return ops.NewPattern(p.Subsystem, secs)
}

// Normalize makes p a valid pattern, as the search does with every
// candidate: an operation that uses a handle no earlier operation binds
// refers to the last object handle bound instead (or goes), and handles and
// tasks are numbered in order.
func Normalize(p ops.Pattern) ops.Pattern { return normalize(p) }

// Fits reports whether p is a valid pattern that can be measured at size n
// within MaxWork (and within its own MaxN).
func Fits(p ops.Pattern, n int) bool {
	return p.Check() == nil && n <= p.MaxN() && ops.Cost(p.Setup)+int64(n)*ops.Cost(p.Body)+ops.Cost(p.Tail) <= MaxWork
}
