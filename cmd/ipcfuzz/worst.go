package main

import (
	"context"
	"encoding/json"
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
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/sides"
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
	sides       sides.Flags
	// the flags' text, before it is read
	subsystem, sizes, report string
}

// flags is worst's own flag table.
func (c *worstArgs) flags() []cli.Flag {
	return []cli.Flag{
		cli.Opt("vs", nil, "the implementation to hold IMPL against: the cost is then IMPL's over its", &c.vs),
		cli.Opt("subsystem", "ids", "subsystem of the patterns: "+strings.Join(props.Names(), ", "), &c.subsystem),
		cli.Opt("metric", nil, "a counter, a ratio A/B of two counters, or wall (default: each implementation's primary counter)", &c.opts.Metric),
		cli.Opt("budget", 60*time.Second, "bound of the whole search's time (the search stops early, and says so)", &c.opts.Budget),
		cli.Opt("seed", nil, "seed of the search (default: random, printed)", &c.opts.Seed),
		cli.Opt("candidates", worst.DefaultCandidates, "candidates measured in the search", &c.opts.Candidates),
		cli.Opt("sizes", "128..512", "sizes every candidate is measured at (within one height of the id tree: 64..4095)", &c.sizes),
		cli.Opt("report-sizes", "128..1024", "sizes the found pattern is measured at for the report", &c.report),
		cli.Opt("reps", 5, "repetitions per size of a wall-time measurement", &c.opts.Reps),
		cli.Opt("out", filepath.Join("corpus", "perf"), "directory the found pattern (.perf), its table (.txt) and plot (.svg) are written to", &c.out),
		cli.Opt("fail-above", 0.0, "exit 1 when the found growth exceeds n^E: the lower end of its interval (0: never)", &c.failAbove),
		cli.Opt("json", nil, "end with one JSON object on stdout", &c.asJSON),
	}
}

func parseWorst(args []string, stderr io.Writer) (*worstArgs, error) {
	c := &worstArgs{}
	c.sides.Notes = stderr
	fs, pos, err := parse("worst", args, c.flags(), c.sides.Rows(60*time.Second))
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, cli.UsageError{Msg: "worst needs one implementation: ipcfuzz worst IMPL [--vs IMPL2] --subsystem S"}
	}
	c.a = pos[0]
	if !cli.Given(fs, "seed") {
		c.opts.Seed = rand.Uint64() >> 1
	}
	if c.sub, err = props.Lookup(c.subsystem); err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	if c.opts.Sizes, err = complexity.ParseSizes(c.sizes); err != nil {
		return nil, cli.UsageError{Msg: "--sizes: " + err.Error()}
	}
	if c.reportSizes, err = complexity.ParseSizes(c.report); err != nil {
		return nil, cli.UsageError{Msg: "--report-sizes: " + err.Error()}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	sub := c.sub
	c.opts.Subsystem = sub.Name
	c.opts.Draw = func(seed uint64) []ops.Op {
		return sub.Draw(engine.RandSource{Rng: mrand.New(mrand.NewSource(int64(seed >> 1)))}, equiv.Exact)
	}
	return c, nil
}

// check refuses what the flags cannot mean.
func (c *worstArgs) check() error {
	switch m := c.opts.Metric; {
	case c.opts.Budget <= 0 || c.opts.Budget > 24*time.Hour:
		return cli.UsageError{Msg: "--budget must be in (0, 24h]"}
	case c.opts.Candidates < 1 || c.opts.Candidates > worst.MaxCandidates:
		return cli.InRange("candidates", c.opts.Candidates, 1, worst.MaxCandidates)
	case c.opts.Reps < 1 || c.opts.Reps > 1000:
		return cli.InRange("reps", c.opts.Reps, 1, 1000)
	case c.failAbove < 0:
		return cli.UsageError{Msg: "--fail-above must not be negative"}
	case strings.Count(m, "/") > 1 || strings.HasPrefix(m, "/") || strings.HasSuffix(m, "/"):
		return cli.Usagef("--metric %q: want a counter, a ratio A/B of two, or wall", m)
	}
	return nil
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
	command := worst.CommandLine(c.a, c.vs, c.opts)
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
	worst.WriteSearched(out, c.opts, res)
	if !res.Found {
		return c.finish(stdout, sum, 0)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(out, "interrupted; the steepest so far, %s:\n%s\n", res.Best.Score.Fit, worst.Indent(sum.Pattern))
		if err := c.finish(stdout, sum, 0); err != nil {
			return err
		}
		return cli.InterruptedError{Msg: "worst interrupted; the steepest pattern so far is above, not written"}
	}
	worst.WriteSteepest(out, c.opts, res)
	return c.write(ctx, res, command, &sum, out, stdout, stderr)
}

// open opens IMPL (and --vs IMPL2) as the search's sides.
func (c *worstArgs) open(ctx context.Context) (func(), error) {
	names := []string{c.a}
	if c.vs != "" {
		names = append(names, c.vs)
	}
	ss, closeAll, err := c.sides.OpenAll(context.WithoutCancel(ctx), names...)
	if err != nil {
		return closeAll, err
	}
	c.opts.A = subject(ss[0])
	if len(ss) > 1 {
		b := subject(ss[1])
		c.opts.B = &b
	}
	return closeAll, nil
}

// write measures the found pattern again at the report's sizes, writes it
// under --out and prints it.
func (c *worstArgs) write(ctx context.Context, res *worst.Result, command string, sum *worst.Summary, out, stdout, stderr io.Writer) error {
	best := res.Best
	f, err := worst.Remeasure(ctx, c.opts, best.Pattern, c.reportSizes)
	if err != nil {
		return err
	}
	sum.Report, sum.Ratio = f.Report, f.Ratio
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return cli.InputError{Err: fmt.Errorf("--out %s: %w", c.out, err)}
	}
	file, noPlot, err := f.Write(c.out, "found by: "+command,
		fmt.Sprintf("search: %s over n=%v, %d candidates", best.Score.Fit, best.Score.Sizes, res.Evaluated),
		"measure it: "+f.Measure(c.out))
	if err != nil {
		return cli.InputError{Err: err}
	}
	if noPlot != nil {
		fmt.Fprintf(stderr, "ipcfuzz: no plot: %v\n", noPlot)
	}
	sum.File = file
	fmt.Fprint(out, f.Shown(file))
	return c.finish(stdout, *sum, best.Score.Fit.CI[0])
}

// finish writes the JSON summary and fails when the lower end of the
// found growth's interval exceeds --fail-above.
func (c *worstArgs) finish(stdout io.Writer, sum worst.Summary, exponent float64) error {
	if c.asJSON {
		if err := json.NewEncoder(stdout).Encode(sum); err != nil {
			return err
		}
	}
	if c.failAbove > 0 && sum.Found && exponent > c.failAbove {
		return cli.Foundf("the found pattern grows at least n^%.2f (its interval's lower end), above --fail-above %.2f", exponent, c.failAbove)
	}
	return nil
}
