package main

import (
	"context"
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

func worstCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseWorst(args, stderr)
	if err != nil {
		return err
	}
	closeAll, err := c.open(ctx)
	defer closeAll()
	if err != nil {
		return err
	}
	command := c.command()
	fmt.Fprintf(stderr, "ipcfuzz: %s (budget %s)\n", command, c.opts.Budget)
	c.opts.Progress = stderr
	res, err := worst.Search(ctx, c.opts)
	if err != nil {
		return err
	}
	sum := worst.Summarize(c.opts, res)
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
		fmt.Fprintf(out, "no candidate had a score: %s\n", worst.NoScore(c.opts.Metric))
		return finishWorst(c, stdout, sum, 0)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(out, "interrupted; the steepest so far, %s:\n%s\n", res.Best.Score.Fit, indent(sum.Pattern))
		if err := finishWorst(c, stdout, sum, 0); err != nil {
			return err
		}
		return interruptedError{"worst interrupted; the steepest pattern so far is above, not written"}
	}
	printSteepest(out, c, res)
	return writeWorst(ctx, c, res, command, &sum, out, stdout, stderr)
}

// open opens IMPL (and --vs IMPL2) as the search's sides.
func (c *worstArgs) open(ctx context.Context) (func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for i, name := range []string{c.a, c.vs} {
		if name == "" {
			continue
		}
		s, _, err := c.sides.open(context.WithoutCancel(ctx), name)
		if err != nil {
			return closeAll, err
		}
		closers = append(closers, func() { _ = s.Impl.Close() })
		subject := complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config}
		if i == 0 {
			c.opts.A = subject
		} else {
			c.opts.B = &subject
		}
	}
	return closeAll, nil
}

// command is the search's command line, with its seed.
func (c *worstArgs) command() string {
	command := fmt.Sprintf("ipcfuzz worst %s", c.a)
	if c.vs != "" {
		command += " --vs " + c.vs
	}
	command += fmt.Sprintf(" --subsystem %s", c.sub.Name)
	if c.opts.Metric != "" {
		command += " --metric " + c.opts.Metric
	}
	return command + fmt.Sprintf(" --seed %d --candidates %d", c.opts.Seed, c.opts.Candidates)
}

// printSteepest says how the found pattern grows, and what bounded its fit.
func printSteepest(out io.Writer, c *worstArgs, res *worst.Result) {
	best := res.Best
	what := fmt.Sprintf("%s %s per measured operation", c.opts.A.Name, worst.MetricLabel(c.opts.Metric))
	if c.opts.B != nil {
		what = fmt.Sprintf("%s/%s of %s per measured operation", c.opts.A.Name, c.opts.B.Name, worst.MetricLabel(c.opts.Metric))
	}
	fmt.Fprintf(out, "steepest: %s grows %s over n=%v (%d operations removed by minimisation)\n", what, best.Score.Fit, best.Score.Sizes, res.Removed)
	if len(best.Score.Sizes) < len(c.opts.Sizes) || best.Score.Sizes[len(best.Score.Sizes)-1] < c.opts.Sizes[len(c.opts.Sizes)-1] {
		fmt.Fprintf(out, "note: the fit had %d points only, n <= %d: what the pattern's body takes (%s)\n", len(best.Score.Sizes), best.Pattern.MaxN(), worst.VaryLimit(best.Pattern))
	}
	if best.Score.Note != "" {
		fmt.Fprintf(out, "note: %s\n", best.Score.Note)
	}
}

// writeWorst measures the found pattern again at the report's sizes,
// writes it under --out and prints it.
func writeWorst(ctx context.Context, c *worstArgs, res *worst.Result, command string, sum *worst.Summary, out, stdout, stderr io.Writer) error {
	best := res.Best
	f, err := worst.Remeasure(ctx, c.opts, best.Pattern, c.reportSizes)
	if err != nil {
		return err
	}
	sum.Report, sum.Ratio = f.Report, f.Ratio
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return inputError{fmt.Errorf("--out %s: %w", c.out, err)}
	}
	file, noPlot, err := f.Write(c.out, "found by: "+command,
		fmt.Sprintf("search: %s over n=%v, %d candidates", best.Score.Fit, best.Score.Sizes, res.Evaluated),
		"measure it: "+f.Measure(c.out))
	if err != nil {
		return inputError{err}
	}
	if noPlot != nil {
		fmt.Fprintf(stderr, "ipcfuzz: no plot: %v\n", noPlot)
	}
	sum.File = file
	fmt.Fprintf(out, "\n%s\n%s\nwritten: %s (the table in %s.txt, the plot in %s.svg)\n", indent(ops.FormatPattern(best.Pattern)), f.Table, file, f.Name, f.Name)
	return finishWorst(c, stdout, *sum, best.Score.Fit.CI[0])
}

// finishWorst writes the JSON summary and fails when the lower end of the
// found growth's interval exceeds --fail-above.
func finishWorst(c *worstArgs, stdout io.Writer, sum worst.Summary, exponent float64) error {
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

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
