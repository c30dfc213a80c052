package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// compareArgs is a parsed compare command line.
type compareArgs struct {
	a, b   string
	sub    engine.Subsystem
	engine string
	rel    equiv.Relation
	opts   runner.Options
	jobs   int
	asJSON bool   // --format json
	format string // --format: text, json, ktap or junit (harness/sink)
	sides  sideFlags
	report string // --report: an HTML page of the findings
	perf   perfFlags
	known  string // --known: the directory of known differences, or "none"
	cover  coverFlags
}

// defaultKnown is where compare reads the known differences of kernel
// versions (corpus.Known) when --known does not say: relative to the
// working directory, and only if it is there.
const defaultKnown = "corpus/known"

func parseCompare(args []string) (*compareArgs, error) {
	c := &compareArgs{}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	subsystem := fs.String("subsystem", "ids", "subsystem to compare: "+strings.Join(props.Names(), ", "))
	fs.StringVar(&c.engine, "engine", "rapid", "script generator: "+strings.Join(engine.Engines, " or "))
	fs.Var(positiveInt{&c.opts.Checks}, "checks", "number of scripts to compare (default 1000, or unlimited with --time)")
	fs.Var(positiveDuration{&c.opts.Duration}, "time", "run for this long")
	fs.Uint64Var(&c.opts.Seed, "seed", 0, "seed of the run (default: random, printed)")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	var ff formatFlag
	ff.register(fs)
	fs.BoolVar(&c.opts.Stats, "stats", false, "count scripts with a task blocked then completed, and with a race; time each operation inside each side (median per kind)")
	fs.BoolVar(&c.opts.KeepGoing, "keep-going", false, "record every divergence (one script per signature, with a hit count) instead of stopping at the first")
	fs.StringVar(&c.opts.Corpus, "corpus", "findings", "directory where findings are written (promote them into corpus/ with ipcfuzz corpus merge)")
	fs.StringVar(&c.report, "report", "", "also write the findings as one HTML page (ipcfuzz report) to this file")
	fs.IntVar(&c.opts.Batch, "batch", 256, "scripts per plugin call")
	fs.IntVar(&c.jobs, "jobs", runtime.NumCPU(), "pairs of implementations working at once (the verdict does not depend on it)")
	fs.StringVar(&c.known, "known", "", "directory of the differences kernel versions explain (docs/known.md; default "+defaultKnown+" when it is there; none: no such directory)")
	c.sides.register(fs, 60*time.Second)
	c.perf.register(fs)
	c.cover.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 2 {
		return nil, usageError{"compare needs two implementations: ipcfuzz compare A B"}
	}
	if err := c.perf.check(fs); err != nil {
		return nil, err
	}
	if c.format, err = ff.format(); err != nil {
		return nil, err
	}
	c.asJSON = c.format == "json"
	if c.perf.on && c.format != "text" && c.format != "json" {
		return nil, usageError{fmt.Sprintf("--perf prints text or json, not %s", c.format)}
	}
	if c.perf.on && (c.report != "" || c.opts.Stats) {
		return nil, usageError{"--report and --stats are of a comparison of results, not of --perf"}
	}
	c.a, c.b = pos[0], pos[1]
	if err := c.cover.prepare(c.a, c.b); err != nil {
		return nil, err
	}
	c.opts.Observe.Time = c.opts.Stats
	c.opts.Observe.Cover = c.cover.dir != ""
	seedGiven := false
	fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
	if !seedGiven {
		c.opts.Seed = rand.Uint64() >> 1
	}
	switch {
	case c.jobs < 1 || c.jobs > 64:
		return nil, usageError{"--jobs must be in 1..64"}
	case c.opts.Batch < 1 || c.opts.Batch > 1<<16:
		return nil, usageError{"--batch must be in 1..65536"}
	}
	if c.opts.Checks == 0 && c.opts.Duration == 0 {
		c.opts.Checks = 1000
		if c.perf.on {
			c.opts.Checks = defaultPerfChecks
		}
	}
	return c, c.resolve(*subsystem, *eq)
}

// resolve looks the subsystem, the relation, the engine's scripts and the
// known differences up.
func (c *compareArgs) resolve(subsystem, eq string) error {
	var err error
	if c.sub, err = props.Lookup(subsystem); err != nil {
		return usageError{err.Error()}
	}
	if c.rel, err = equiv.Parse(eq); err != nil {
		return usageError{err.Error()}
	}
	if !slices.Contains(c.sub.Relations, c.rel) {
		return usageError{fmt.Sprintf("subsystem %s is compared under %s, not %s", c.sub.Name, relationNames(c.sub.Relations), c.rel)}
	}
	gen, ok := c.sub.Scripts(c.engine, c.rel)
	if !ok {
		return usageError{fmt.Sprintf("unknown engine %q (want %s)", c.engine, strings.Join(engine.Engines, " or "))}
	}
	c.opts.Source = runner.Seeded(gen)
	c.opts.Known, err = readKnown(c.known)
	return err
}

// readKnown reads the known differences --known names: none for "none",
// defaultKnown when it is there and nothing is said; a directory named
// that is not there, or a bad line in one of its files, is the user's to
// fix.
func readKnown(dir string) (*corpus.Known, error) {
	switch dir {
	case "none":
		return nil, nil
	case "":
		if _, err := os.Stat(defaultKnown); err != nil {
			return nil, nil
		}
		dir = defaultKnown
	}
	k, err := corpus.ReadKnown(dir)
	if err != nil {
		return nil, inputError{fmt.Errorf("--known: %w", err)}
	}
	return k, nil
}

func relationNames(rs []equiv.Relation) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r))
	}
	return strings.Join(out, " or ")
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
	closeAll, err := c.openPairs(context.WithoutCancel(ctx), &o, stderr)
	defer closeAll()
	if err != nil {
		return err
	}
	o.Command = fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --seed %d --equiv %s", c.a, c.b, c.sub.Name, c.engine, o.Seed, c.rel)
	o.Engine = c.engine
	o.Version, o.Revision = corpus.BuildVersion()
	out, err := sink.New(c.format, stdout, stderr)
	if err != nil {
		return usageError{err.Error()}
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
	coverOut := stdout
	if c.format != "text" {
		coverOut = stderr
	}
	if err := c.cover.write(coverOut); err != nil {
		return err
	}
	if page != nil {
		if err := page.Err(); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(stderr, "ipcfuzz: the findings' report is %s\n", c.report)
	}
	switch {
	case res.Divergences > 0 || res.Failures > 0:
		return foundError{fmt.Sprintf("%d divergences, %d plugin failures; scripts: %s", res.Divergences, res.Failures, strings.Join(res.Scripts, " "))}
	case res.Infrastructure > 0:
		return infrastructureError{fmt.Sprintf("%d infrastructure events (a side killed from outside; no script failed again on a fresh plugin, alone), nothing found in %d checks", res.Infrastructure, res.Checks)}
	case res.Interrupted:
		return interruptedError{fmt.Sprintf("interrupted after %d checks; nothing found so far", res.Checks)}
	}
	return nil
}

// openPairs opens one pair per job into o.Pairs; closeAll closes those
// opened, whatever failed.
func (c *compareArgs) openPairs(setup context.Context, o *runner.Options, stderr io.Writer) (closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	c.sides.notes = stderr // for the first job's sides
	for i := range c.jobs {
		if i > 0 {
			c.sides.notes = nil
		}
		p, closePair, err := c.sides.openPair(setup, c.a, c.b, c.sub, c.rel)
		if err != nil {
			return closeAll, err
		}
		closers = append(closers, closePair)
		c.cover.attach(p)
		o.Pairs = append(o.Pairs, p)
	}
	return closeAll, nil
}

// sideLabel is sink.SideLabel: a side's name and, for a kernel side, the
// release that actually ran.
func sideLabel(name, release string) string { return sink.SideLabel(name, release) }
