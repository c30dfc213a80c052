package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/perf"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// perfFlags are compare's flags of a performance comparison (--perf).
type perfFlags struct {
	on        bool
	metric    string
	threshold float64
	sizes     string
	reps      int
	workload  string
}

// defaultPerfChecks is the scripts --perf judges when neither --checks nor
// --time is given: each script is cut into up to perf.MaxCuts patterns,
// each measured on both sides at every size.
const defaultPerfChecks = 50

// flags are the rows of the --perf flags.
func (f *perfFlags) flags() []cli.Flag {
	return []cli.Flag{
		cli.Opt("perf", nil, "compare how the costs grow instead of the results: B growing faster than A on a script's repeated part is a finding", &f.on),
		cli.Opt("metric", nil, "--perf: a counter, a ratio A/B of two counters, or wall (default: each side's primary counter)", &f.metric),
		cli.Opt("threshold", perf.DefaultThreshold, "--perf: report B when its exponent's interval lies above A's by more than this", &f.threshold),
		cli.Opt("sizes", perf.DefaultSizes, "--perf: the sizes every repeated part is measured at", &f.sizes),
		cli.Positive("reps", 5, "--perf: repetitions per size of a wall-time measurement", &f.reps),
		cli.Opt("workload", nil, "--perf: judge this pattern file (a performance finding) again instead of drawing scripts", &f.workload),
	}
}

// check refuses the --perf flags without --perf.
func (f *perfFlags) check(fs *flag.FlagSet) error {
	if f.on {
		return nil
	}
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "metric", "threshold", "sizes", "reps", "workload":
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return cli.UsageError{Msg: strings.Join(bad, ", ") + " only with --perf"}
	}
	return nil
}

func perfCompareCmd(ctx context.Context, c *compareArgs, stdout, stderr io.Writer) error {
	sizes, err := complexity.ParseSizes(c.perf.sizes)
	if err != nil {
		return cli.UsageError{Msg: "--sizes: " + err.Error()}
	}
	o := perf.Options{Metric: c.perf.metric, Sizes: sizes, Reps: c.perf.reps, Threshold: c.perf.threshold}
	if c.perf.metric != worst.Wall {
		o.Reps = 1
	}
	if err := o.Check(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if err := corpus.CheckWritable(c.opts.Corpus); err != nil {
		return err
	}
	c.sides.Notes = stderr
	pair, closeAll, err := c.sides.OpenPair(context.WithoutCancel(ctx), c.a, c.b, c.sub.Name, c.rel, c.sub.Invariant)
	if err != nil {
		return err
	}
	defer closeAll()
	for _, s := range []runner.Side{pair.A, pair.B} {
		if c.perf.metric != worst.Wall && !s.Info.Counters {
			return cli.Usagef("%s counts nothing: compare --perf with it needs --metric wall", s.Name)
		}
	}
	o.A, o.B = subject(pair.A), subject(pair.B)
	if c.perf.workload != "" {
		return perfReplay(ctx, c, o, stdout)
	}
	ro := perfRunOptions(c, o, pair, stdout, stderr)
	fmt.Fprintf(stderr, "ipcfuzz: %s\n", ro.Header.Command)
	res, err := perf.Run(ctx, ro)
	if err != nil {
		return err
	}
	return printPerf(stdout, c, res)
}

// perfRunOptions are the options of a --perf run of compare's command
// line: the header's command and the replay command say it again.
func perfRunOptions(c *compareArgs, o perf.Options, pair *runner.Pair, stdout, stderr io.Writer) perf.RunOptions {
	ro := perf.RunOptions{Options: o, Pair: pair, Generate: c.opts.Source.Next, Seed: c.opts.Seed, Checks: c.opts.Checks, Duration: c.opts.Duration,
		KeepGoing: c.opts.KeepGoing, Corpus: c.opts.Corpus, Report: stdout, Notes: stderr}
	if c.asJSON {
		ro.Report = stderr
	}
	ro.Header.Command, ro.Replay = perf.CommandLines(c.a, c.b, c.sub.Name, c.engine, c.opts.Seed, o)
	ro.Header.Version, ro.Header.Revision = corpus.BuildVersion()
	ro.Header.Engine, ro.Header.A, ro.Header.B = c.engine, c.a, c.b
	return ro
}

// printPerf prints a --perf run's summary (or its JSON object) and says
// how it ends.
func printPerf(stdout io.Writer, c *compareArgs, res *perf.Result) error {
	if c.asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return err
		}
	} else {
		res.WriteText(stdout)
	}
	switch {
	case res.Performance > 0:
		return cli.Foundf("%d performance findings: %s", res.Performance, strings.Join(res.Scripts, " "))
	case res.Interrupted:
		return cli.Interruptedf("interrupted after %d scripts; nothing found so far", res.Checks)
	}
	return nil
}

// perfReplay judges a pattern file again: exit 1 when B still grows faster.
func perfReplay(ctx context.Context, c *compareArgs, o perf.Options, stdout io.Writer) error {
	text, err := os.ReadFile(c.perf.workload)
	if err != nil {
		return cli.InputError{Err: fmt.Errorf("--workload: %w", err)}
	}
	p, err := ops.ParsePattern(c.perf.workload, strings.NewReader(string(text)))
	if err != nil {
		return cli.InputError{Err: err}
	}
	if p.Subsystem != c.sub.Name {
		return cli.Usagef("%s is a pattern of %s, not of --subsystem %s", c.perf.workload, p.Subsystem, c.sub.Name)
	}
	if !worst.Fits(p, o.Sizes[len(o.Sizes)-1]) {
		return cli.Usagef("%s cannot be measured at n=%d (at most %d)", c.perf.workload, o.Sizes[len(o.Sizes)-1], p.MaxN())
	}
	v, err := perf.Judge(ctx, o, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s vs %s: %s\n", c.perf.workload, o.A.Name, o.B.Name, v)
	if v.Slower {
		return cli.Foundf("%s grows faster than %s on %s by at least n^%.2f (threshold n^%g)", o.B.Name, o.A.Name, c.perf.workload, v.Excess, o.Threshold)
	}
	if v.Invalid != "" {
		return errors.New(v.Invalid)
	}
	return nil
}
