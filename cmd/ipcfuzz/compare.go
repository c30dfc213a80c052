package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/cover"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// compareArgs is a parsed compare command line.
type compareArgs struct {
	a, b          string
	sub           engine.Subsystem
	engine        string
	rel           equiv.Relation
	opts          runner.Options
	jobs          int
	asJSON        bool   // --format json
	format        string // --format: text, json, ktap or junit (harness/sink)
	sides         sides.Flags
	report        string // --report: an HTML page of the findings
	perf          perfFlags
	known         string // --known: the directory of known differences, or "none"
	cover         coverFlags
	subsystem, eq string
}

// flags is compare's own flag table.
func (c *compareArgs) flags() []cli.Flag {
	return []cli.Flag{
		cli.Opt("subsystem", "ids", "subsystem to compare: "+strings.Join(props.Names(), ", "), &c.subsystem),
		cli.Opt("engine", "rapid", "script generator: "+strings.Join(engine.Engines, " or "), &c.engine),
		cli.Positive("checks", nil, "number of scripts to compare (default 1000, or unlimited with --time)", &c.opts.Checks),
		cli.Positive("time", nil, "run for this long", &c.opts.Duration),
		cli.Opt("seed", nil, "seed of the run (default: random, printed)", &c.opts.Seed),
		cli.Opt("equiv", "exact", "equivalence: exact or ids-renamed", &c.eq),
		cli.Opt("stats", nil, "count scripts with a task blocked then completed, and with a race; time each operation inside each side (median per kind)", &c.opts.Stats),
		cli.Opt("keep-going", nil, "record every divergence (one script per signature, with a hit count) instead of stopping at the first", &c.opts.KeepGoing),
		cli.Opt("corpus", "findings", "directory where findings are written (promote them into corpus/ with ipcfuzz corpus merge)", &c.opts.Corpus),
		cli.Opt("report", nil, "also write the findings as one HTML page (ipcfuzz report) to this file", &c.report),
		cli.Opt("batch", 256, "scripts per plugin call", &c.opts.Batch),
		cli.Opt("jobs", runtime.NumCPU(), "pairs of implementations working at once (the verdict does not depend on it)", &c.jobs),
		cli.Opt("known", nil, "directory of the differences kernel versions explain (docs/known.md; default "+corpus.DefaultKnown+" when it is there; none: no such directory)", &c.known),
	}
}

func parseCompare(args []string) (*compareArgs, error) {
	c := &compareArgs{}
	var ff cli.Format
	fs, pos, err := parse("compare", args, c.flags(), ff.Flags(sink.Formats), c.sides.Rows(60*time.Second), c.perf.flags(), c.cover.flags())
	if err != nil {
		return nil, err
	}
	if len(pos) != 2 {
		return nil, cli.UsageError{Msg: "compare needs two implementations: ipcfuzz compare A B"}
	}
	if err := c.perf.check(fs); err != nil {
		return nil, err
	}
	if c.format, err = ff.Value(); err != nil {
		return nil, err
	}
	c.asJSON = c.format == "json"
	if c.perf.on && c.format != "text" && c.format != "json" {
		return nil, cli.Usagef("--perf prints text or json, not %s", c.format)
	}
	if c.perf.on && (c.report != "" || c.opts.Stats) {
		return nil, cli.UsageError{Msg: "--report and --stats are of a comparison of results, not of --perf"}
	}
	c.a, c.b = pos[0], pos[1]
	if err := c.cover.prepare(c.a, c.b); err != nil {
		return nil, err
	}
	c.opts.Observe.Time = c.opts.Stats
	c.opts.Observe.Cover = c.cover.dir != "" || c.engine == "guided"
	if c.engine == "guided" && !cli.Given(fs, "batch") {
		c.opts.Batch = engine.GuidedBatch
	}
	if !cli.Given(fs, "seed") {
		c.opts.Seed = rand.Uint64() >> 1
	}
	if err := cli.InRange("jobs", c.jobs, 1, 64); err != nil {
		return nil, err
	}
	if err := cli.InRange("batch", c.opts.Batch, 1, 1<<16); err != nil {
		return nil, err
	}
	if c.opts.Checks == 0 && c.opts.Duration == 0 {
		c.opts.Checks = 1000
		if c.perf.on {
			c.opts.Checks = defaultPerfChecks
		}
	}
	return c, c.resolve()
}

// resolve looks the subsystem, the relation, the engine's scripts and the
// known differences up.
func (c *compareArgs) resolve() error {
	var err error
	if c.sub, err = props.Lookup(c.subsystem); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if c.rel, err = equiv.Parse(c.eq); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if !slices.Contains(c.sub.Relations, c.rel) {
		return cli.Usagef("subsystem %s is compared under %s, not %s", c.sub.Name, equiv.Alternatives(c.sub.Relations), c.rel)
	}
	src, ok := c.sub.Source(c.engine, c.rel)
	if !ok {
		return cli.Usagef("unknown engine %q (want %s)", c.engine, strings.Join(engine.Engines, " or "))
	}
	c.opts.Source = src
	if g, ok := src.(*engine.Guided); ok { // it follows the PCs in the files a KCOV image covers
		g.Within = cover.Within(c.a, c.b)
	}
	if c.opts.Known, err = corpus.LoadKnown(c.known); err != nil {
		return cli.InputError{Err: fmt.Errorf("--known: %w", err)}
	}
	return nil
}

func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseCompare(args)
	if err != nil {
		return err
	}
	if c.perf.on {
		return perfCompareCmd(ctx, c, stdout, stderr)
	}
	// Before the first script: a findings directory that cannot be
	// written is a setup failure now, not a lost finding later.
	if err := corpus.CheckWritable(c.opts.Corpus); err != nil {
		return err
	}
	// The plugins are set up (and closed) outside ctx: a Ctrl-C stops the
	// run, not the cleanup.
	o := c.opts
	c.sides.Notes = stderr
	var closeAll func()
	o.Pairs, closeAll, err = c.sides.OpenPairs(context.WithoutCancel(ctx), c.jobs, c.a, c.b, c.sub.Name, c.rel, c.sub.Invariant, c.cover.attach)
	defer closeAll()
	if err != nil {
		return err
	}
	o.Command = fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --seed %d --equiv %s", c.a, c.b, c.sub.Name, c.engine, o.Seed, c.rel)
	o.Engine = c.engine
	o.Version, o.Revision = corpus.BuildVersion()
	out, err := sink.New(c.format, stdout, stderr)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	o.Progress, o.Sink = stderr, out
	var page sink.Writer // --report
	if c.report != "" {
		page = sink.HTML(c.report, report.Options{Title: o.Command})
		o.Sink = sink.Tee(out, page)
	}
	fmt.Fprintf(stderr, "ipcfuzz: %s (%d jobs)\n", o.Command, c.jobs)
	res, runErr := runner.Run(ctx, o)
	if err := out.Err(); err != nil {
		return fmt.Errorf("writing the %s output: %w", c.format, err)
	}
	if runErr != nil {
		return runErr
	}
	if g, ok := o.Source.(*engine.Guided); ok {
		fmt.Fprintln(stderr, "ipcfuzz: "+g.Summary())
	}
	if err := c.cover.write(c.format, stdout, stderr); err != nil {
		return err
	}
	if page != nil {
		if err := page.Err(); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(stderr, "ipcfuzz: the findings' report is %s\n", c.report)
	}
	return compareVerdict(res)
}

// compareVerdict is how a comparison ends: found (exit 1), an
// infrastructure event (exit 3), interrupted (130) or nothing (0).
func compareVerdict(res *runner.Result) error {
	switch {
	case res.Divergences > 0 || res.Failures > 0:
		return cli.Foundf("%d divergences, %d plugin failures; scripts: %s", res.Divergences, res.Failures, strings.Join(res.Scripts, " "))
	case res.Infrastructure > 0:
		return cli.InfrastructureError{Msg: fmt.Sprintf("%d infrastructure events (a side killed from outside; no script failed again on a fresh plugin, alone), nothing found in %d checks", res.Infrastructure, res.Checks)}
	case res.Interrupted:
		return cli.Interruptedf("interrupted after %d checks; nothing found so far", res.Checks)
	}
	return nil
}
