package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	mrand "math/rand"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// worstArgs is a parsed worst command line.
type worstArgs struct {
	a, vs       string
	sub         engine.Subsystem
	opts        worst.Options
	reportSizes []int
	out         string
	failAbove   float64
	asJSON      bool
	sides       sideFlags
}

func parseWorst(args []string, stderr io.Writer) (*worstArgs, error) {
	c := &worstArgs{}
	fs := flag.NewFlagSet("worst", flag.ContinueOnError)
	fs.StringVar(&c.vs, "vs", "", "the implementation to hold IMPL against: the cost is then IMPL's over its")
	subsystem := fs.String("subsystem", "ids", "subsystem of the patterns: "+strings.Join(props.Names(), ", "))
	fs.StringVar(&c.opts.Metric, "metric", "", "a counter, a ratio A/B of two counters, or wall (default: each implementation's primary counter)")
	fs.DurationVar(&c.opts.Budget, "budget", 60*time.Second, "bound of the whole search's time (the search stops early, and says so)")
	fs.Uint64Var(&c.opts.Seed, "seed", 0, "seed of the search (default: random, printed)")
	fs.IntVar(&c.opts.Candidates, "candidates", worst.DefaultCandidates, "candidates measured in the search")
	sizes := fs.String("sizes", "128..512", "sizes every candidate is measured at (within one height of the id tree: 64..4095)")
	report := fs.String("report-sizes", "128..1024", "sizes the found pattern is measured at for the report")
	fs.IntVar(&c.opts.Reps, "reps", 5, "repetitions per size of a wall-time measurement")
	fs.StringVar(&c.out, "out", filepath.Join("corpus", "perf"), "directory the found pattern (.perf), its table (.txt) and plot (.svg) are written to")
	fs.Float64Var(&c.failAbove, "fail-above", 0, "exit 1 when the found growth exceeds n^E: the lower end of its interval (0: never)")
	fs.BoolVar(&c.asJSON, "json", false, "end with one JSON object on stdout")
	c.sides.notes = stderr
	c.sides.register(fs, 60*time.Second)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, usageError{"worst needs one implementation: ipcfuzz worst IMPL [--vs IMPL2] --subsystem S"}
	}
	c.a = pos[0]
	seedGiven := false
	fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
	if !seedGiven {
		c.opts.Seed = rand.Uint64() >> 1
	}
	if c.sub, err = props.Lookup(*subsystem); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.opts.Sizes, err = complexity.ParseSizes(*sizes); err != nil {
		return nil, usageError{"--sizes: " + err.Error()}
	}
	if c.reportSizes, err = complexity.ParseSizes(*report); err != nil {
		return nil, usageError{"--report-sizes: " + err.Error()}
	}
	switch {
	case c.opts.Budget <= 0 || c.opts.Budget > 24*time.Hour:
		return nil, usageError{"--budget must be in (0, 24h]"}
	case c.opts.Candidates < 1 || c.opts.Candidates > worst.MaxCandidates:
		return nil, usageError{fmt.Sprintf("--candidates must be in 1..%d", worst.MaxCandidates)}
	case c.opts.Reps < 1 || c.opts.Reps > 1000:
		return nil, usageError{"--reps must be in 1..1000"}
	case c.failAbove < 0:
		return nil, usageError{"--fail-above must not be negative"}
	case strings.Count(c.opts.Metric, "/") > 1 || strings.HasPrefix(c.opts.Metric, "/") || strings.HasSuffix(c.opts.Metric, "/"):
		return nil, usageError{fmt.Sprintf("--metric %q: want a counter, a ratio A/B of two, or wall", c.opts.Metric)}
	}
	sub := c.sub
	c.opts.Subsystem = sub.Name
	c.opts.Draw = func(seed uint64) []ops.Op {
		return sub.Draw(engine.RandSource{Rng: mrand.New(mrand.NewSource(int64(seed >> 1)))}, equiv.Exact)
	}
	return c, nil
}

// worstSummary is the JSON object of --json.
type worstSummary struct {
	A         string             `json:"a"`
	Vs        string             `json:"vs,omitempty"`
	Subsystem string             `json:"subsystem"`
	Metric    string             `json:"metric"`
	Seed      uint64             `json:"seed"`
	Found     bool               `json:"found"`
	Pattern   string             `json:"pattern,omitempty"`
	File      string             `json:"file,omitempty"`
	Search    worst.Score        `json:"search"`
	Report    *complexity.Report `json:"report,omitempty"`
	Ratio     *complexity.Fit    `json:"ratio,omitempty"`
	Evaluated int                `json:"evaluated"`
	Invalid   int                `json:"invalid"`
	Removed   int                `json:"removed"`
	CutShort  bool               `json:"cut_short"`
	Seconds   float64            `json:"seconds"`
}

func worstCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseWorst(args, stderr)
	if err != nil {
		return err
	}
	open := func(name string) (complexity.Subject, func(), error) {
		s, _, err := c.sides.open(context.WithoutCancel(ctx), name)
		if err != nil {
			return complexity.Subject{}, nil, err
		}
		return complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config}, func() { _ = s.Impl.Close() }, nil
	}
	a, closeA, err := open(c.a)
	if err != nil {
		return err
	}
	defer closeA()
	c.opts.A = a
	subjects := []complexity.Subject{a}
	if c.vs != "" {
		b, closeB, err := open(c.vs)
		if err != nil {
			return err
		}
		defer closeB()
		c.opts.B = &b
		subjects = append(subjects, b)
	}
	command := fmt.Sprintf("ipcfuzz worst %s", c.a)
	if c.vs != "" {
		command += " --vs " + c.vs
	}
	command += fmt.Sprintf(" --subsystem %s", c.sub.Name)
	if c.opts.Metric != "" {
		command += " --metric " + c.opts.Metric
	}
	command += fmt.Sprintf(" --seed %d --candidates %d", c.opts.Seed, c.opts.Candidates)
	fmt.Fprintf(stderr, "ipcfuzz: %s (budget %s)\n", command, c.opts.Budget)
	c.opts.Progress = stderr
	res, err := worst.Search(ctx, c.opts)
	if err != nil {
		return err
	}
	sum := worstSummary{A: a.Name, Subsystem: c.sub.Name, Metric: metricLabel(c.opts.Metric), Seed: c.opts.Seed,
		Found: res.Found, Evaluated: res.Evaluated, Invalid: res.Invalid, Removed: res.Removed, CutShort: res.CutShort, Seconds: res.Seconds}
	if c.opts.B != nil {
		sum.Vs = c.opts.B.Name
	}
	out := stdout
	if c.asJSON {
		out = stderr
	}
	cut := ""
	if res.CutShort {
		cut = fmt.Sprintf("; the budget of %s ended it before %d candidates, so another run may find another pattern", c.opts.Budget, c.opts.Candidates)
	}
	fmt.Fprintf(out, "%d candidates measured (%d without a score) in %.1fs%s\n", res.Evaluated, res.Invalid, res.Seconds, cut)
	if !res.Found {
		fmt.Fprintf(out, "no candidate had a score: %s\n", noScoreReason(c))
		return finishWorst(c, stdout, sum, 0)
	}
	best := res.Best
	sum.Pattern, sum.Search = ops.FormatPattern(best.Pattern), best.Score
	if ctx.Err() != nil {
		fmt.Fprintf(out, "interrupted; the steepest so far, %s:\n%s\n", best.Score.Fit, indent(sum.Pattern))
		if err := finishWorst(c, stdout, sum, 0); err != nil {
			return err
		}
		return interruptedError{"worst interrupted; the steepest pattern so far is above, not written"}
	}
	what := fmt.Sprintf("%s %s per measured operation", a.Name, metricLabel(c.opts.Metric))
	if c.opts.B != nil {
		what = fmt.Sprintf("%s/%s of %s per measured operation", a.Name, c.opts.B.Name, metricLabel(c.opts.Metric))
	}
	fmt.Fprintf(out, "steepest: %s grows %s over n=%v (%d operations removed by minimisation)\n", what, best.Score.Fit, best.Score.Sizes, res.Removed)
	if len(best.Score.Sizes) < len(c.opts.Sizes) || best.Score.Sizes[len(best.Score.Sizes)-1] < c.opts.Sizes[len(c.opts.Sizes)-1] {
		fmt.Fprintf(out, "note: the fit had %d points only, n <= %d: what the pattern's body takes (%s)\n", len(best.Score.Sizes), best.Pattern.MaxN(), varyLimit(best.Pattern))
	}
	if best.Score.Note != "" {
		fmt.Fprintf(out, "note: %s\n", best.Score.Note)
	}
	// The found pattern, measured again at the report's sizes.
	w := ops.PatternWorkload(best.Pattern)
	metric, counter := complexity.Counter, c.opts.Metric
	reps := 1
	if c.opts.Metric == worst.Wall {
		metric, counter, reps = complexity.Wall, "", c.opts.Reps
	}
	sizes := worst.SizesFor(best.Pattern, c.reportSizes)
	rep, err := complexity.Run(ctx, subjects, w, sizes, reps, counter, nil)
	if err != nil {
		return fmt.Errorf("measuring the found pattern at %v: %w", sizes, err)
	}
	name := perfName(c.sub.Name, a.Name, best.Pattern)
	rep.Label = name
	sum.Report = rep
	if c.opts.B != nil {
		if f, ok := ratioFit(rep, metric); ok {
			sum.Ratio = &f
		}
	}
	var table strings.Builder
	if err := complexity.WriteTable(&table, rep, metric); err != nil {
		return err
	}
	if sum.Ratio != nil {
		fmt.Fprintf(&table, "  %s/%s ratio %s\n", a.Name, c.opts.B.Name, sum.Ratio)
	}
	header := []string{"found by: " + command,
		fmt.Sprintf("search: %s over n=%v, %d candidates", best.Score.Fit, best.Score.Sizes, res.Evaluated),
		"measure it: ipcfuzz complexity " + strings.Join(subjectNames(subjects), " ") + " --workload " + filepath.Join(c.out, name+".perf") + " --metric " + string(metric) + counterFlag(counter)}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return inputError{fmt.Errorf("--out %s: %w", c.out, err)}
	}
	file := filepath.Join(c.out, name+".perf")
	if err := os.WriteFile(file, []byte(ops.FormatPattern(best.Pattern, header...)), 0o644); err != nil {
		return inputError{fmt.Errorf("writing %s: %w", file, err)}
	}
	if err := os.WriteFile(filepath.Join(c.out, name+".txt"), []byte(table.String()), 0o644); err != nil {
		return inputError{fmt.Errorf("writing the table: %w", err)}
	}
	plot := filepath.Join(c.out, name+".svg")
	if err := complexity.Plot(rep, metric, plot); err != nil {
		fmt.Fprintf(stderr, "ipcfuzz: no plot: %v\n", err)
	}
	sum.File = file
	fmt.Fprintf(out, "\n%s\n%s\nwritten: %s (the table in %s.txt, the plot in %s.svg)\n", indent(ops.FormatPattern(best.Pattern)), table.String(), file, name, name)
	return finishWorst(c, stdout, sum, best.Score.Fit.CI[0])
}

// finishWorst writes the JSON summary and fails when the lower end of the
// found growth's interval exceeds --fail-above.
func finishWorst(c *worstArgs, stdout io.Writer, sum worstSummary, exponent float64) error {
	if c.asJSON {
		if err := json.NewEncoder(stdout).Encode(sum); err != nil {
			return err
		}
	}
	if c.failAbove > 0 && sum.Found && exponent > c.failAbove {
		return foundError{fmt.Sprintf("the found pattern grows at least n^%.2f (its interval's lower end), above --fail-above %.2f", exponent, c.failAbove)}
	}
	return nil
}

func noScoreReason(c *worstArgs) string {
	if c.opts.Metric == worst.Wall {
		return "every candidate failed or took no time"
	}
	return fmt.Sprintf("the metric %s was missing or 0 at some size in every candidate (see ipcfuzz complexity --format json for what each implementation counts)", metricLabel(c.opts.Metric))
}

func metricLabel(m string) string {
	if m == "" {
		return "primary counter"
	}
	return m
}

func counterFlag(counter string) string {
	if counter == "" {
		return ""
	}
	return " --counter " + counter
}

func subjectNames(s []complexity.Subject) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

// varyLimit says what bounds the sizes of a pattern.
func varyLimit(p ops.Pattern) string {
	for i := range p.Body {
		if p.VaryOf(i).Task {
			return fmt.Sprintf("task=t$i: one task per repetition, t1..t%d", ops.MaxTask)
		}
	}
	for i := range p.Body {
		if p.VaryOf(i).Page > 0 {
			return fmt.Sprintf("$i pages within a window of %d pages", ops.VMAPatternPages)
		}
	}
	return "the work of its body"
}

// perfName names a found pattern's files: subsystem, implementation, and a
// hash of the pattern.
func perfName(sub, impl string, p ops.Pattern) string {
	h := sha256.Sum256([]byte(ops.FormatPattern(p)))
	base := strings.Map(func(r rune) rune {
		if r == '/' || r == '.' || r == ':' || r == '=' || r == ',' || r == ' ' {
			return '_'
		}
		return r
	}, filepath.Base(impl))
	return fmt.Sprintf("%s-%s-%s", sub, strings.Trim(base, "_"), hex.EncodeToString(h[:4]))
}

// ratioFit fits the ratio of the first series' shown values to the
// second's.
func ratioFit(r *complexity.Report, metric complexity.Metric) (complexity.Fit, bool) {
	if len(r.Impls) < 2 {
		return complexity.Fit{}, false
	}
	a, b := r.Impls[0], r.Impls[1]
	samples := make([][]float64, len(r.Sizes))
	for i := range r.Sizes {
		var x, y float64
		if metric == complexity.Wall {
			x, y = float64(a.WallNs[i]), float64(b.WallNs[i])
		} else {
			if a.ShownValues == nil || b.ShownValues == nil {
				return complexity.Fit{}, false
			}
			x, y = a.ShownValues[i], b.ShownValues[i]
		}
		if y == 0 {
			return complexity.Fit{}, false
		}
		samples[i] = []float64{x / y}
	}
	return complexity.FitSeries(r.Sizes, samples), true
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
