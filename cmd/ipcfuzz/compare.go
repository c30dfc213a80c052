package main

import (
	"context"
	"encoding/json"
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
	asJSON bool
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
	fs.BoolVar(&c.asJSON, "json", false, "end with one JSON object on stdout")
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
	if c.sub, err = props.Lookup(*subsystem); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.rel, err = equiv.Parse(*eq); err != nil {
		return nil, usageError{err.Error()}
	}
	if !slices.Contains(c.sub.Relations, c.rel) {
		return nil, usageError{fmt.Sprintf("subsystem %s is compared under %s, not %s", c.sub.Name, relationNames(c.sub.Relations), c.rel)}
	}
	gen, ok := c.sub.Scripts(c.engine, c.rel)
	if !ok {
		return nil, usageError{fmt.Sprintf("unknown engine %q (want %s)", c.engine, strings.Join(engine.Engines, " or "))}
	}
	c.opts.Source = runner.Seeded(gen)
	if c.opts.Known, err = readKnown(c.known); err != nil {
		return nil, err
	}
	return c, nil
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
	setup := context.WithoutCancel(ctx)
	c.sides.notes = stderr // for the first job's sides
	o := c.opts
	for i := range c.jobs {
		if i > 0 {
			c.sides.notes = nil
		}
		p, closeAll, err := c.sides.openPair(setup, c.a, c.b, c.sub, c.rel)
		if err != nil {
			return err
		}
		defer closeAll()
		c.cover.attach(p)
		o.Pairs = append(o.Pairs, p)
	}
	o.Command = fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --seed %d --equiv %s", c.a, c.b, c.sub.Name, c.engine, o.Seed, c.rel)
	o.Engine = c.engine
	o.Version, o.Revision = buildVersion()
	o.Progress, o.Report = stderr, stdout
	if c.asJSON {
		o.Report = stderr
	}
	fmt.Fprintf(stderr, "ipcfuzz: %s (%d jobs)\n", o.Command, c.jobs)
	res, runErr := runner.Run(ctx, o)
	if res != nil {
		if err := printSummary(stdout, c, res); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if err := c.cover.write(o.Report); err != nil {
		return err
	}
	if c.report != "" {
		if err := writeReport(c.report, res.Scripts, report.Options{Title: o.Command}); err != nil {
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

func printSummary(stdout io.Writer, c *compareArgs, res *runner.Result) error {
	if c.asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	note := ""
	if res.Interrupted {
		note = " (interrupted)"
	}
	if res.Infrastructure > 0 {
		note += fmt.Sprintf(", %d infrastructure events (not findings)", res.Infrastructure)
	}
	if res.Unstored > 0 {
		note += fmt.Sprintf(", %d findings could not be stored (printed above)", res.Unstored)
	}
	if expected := res.ExpectedHits(); expected > 0 {
		note += fmt.Sprintf(", %d divergences expected (known differences of the kernels' versions, below)", expected)
	}
	fmt.Fprintf(stdout, "%s vs %s (%s, engine %s, seed %d, %s): %d checks, %d ops in %.1fs (%.0f ops/s): %d divergences, %d plugin failures%s\n",
		sideLabel(res.A, res.KernelA), sideLabel(res.B, res.KernelB), res.Subsystem, c.engine, c.opts.Seed, c.rel, res.Checks, res.Ops, res.Seconds, res.OpsPerSec, res.Divergences, res.Failures, note)
	if st := res.Stats; st != nil && res.Checks > 0 {
		fmt.Fprintf(stdout, "stats: %d of %d sequences (%.1f%%) had a task blocked and later completed; %d (%.1f%%) had a race (an operation with several allowed outcomes)\n",
			st.BlockedThenCompleted, res.Checks, 100*float64(st.BlockedThenCompleted)/float64(res.Checks),
			st.Races, 100*float64(st.Races)/float64(res.Checks))
	}
	for _, line := range res.TimingLines() {
		fmt.Fprintln(stdout, line)
	}
	printKnown(stdout, res)
	if c.opts.KeepGoing {
		printCauses(stdout, res)
	}
	return nil
}

// printKnown says what the known differences explained, apart from the
// findings, and which of them applied but explained nothing.
func printKnown(w io.Writer, res *runner.Result) {
	for _, x := range res.Expected {
		sigs := make([]string, len(x.Signatures))
		for i, s := range x.Signatures {
			sigs[i] = fmt.Sprintf("%s %d", s.Signature, s.Hits)
		}
		fmt.Fprintf(w, "expected: %d hits, %s (%s; commit %s; %s): %s\n", x.Hits, x.Reason, x.Range, x.Commit, x.Where(), strings.Join(sigs, ", "))
	}
	for _, e := range res.StaleKnown {
		fmt.Fprintf(w, "stale known difference %s: %s (%s) explained nothing in %d checks of %s against %s\n", e.Where(), e.Pattern, e.Range, res.Checks, res.KernelA, res.KernelB)
	}
}

// sideLabel is a side's name as the user wrote it and, for a kernel side,
// the release that actually ran ("kernel:image=x.deb [Linux 6.1.0-57]"):
// a summary says what was compared, not only what was asked for.
func sideLabel(name, release string) string {
	if release == "" {
		return name
	}
	return fmt.Sprintf("%s [Linux %s]", name, release)
}

// printCauses lists what a --keep-going run found, one cause at a time:
// a cause with one signature in one line, one with several in a line and
// then one indented line per signature.
func printCauses(w io.Writer, res *runner.Result) {
	found := map[string]runner.Finding{}
	for _, f := range res.Findings {
		found[f.Signature] = f
	}
	line := func(prefix string, f runner.Finding) {
		fmt.Fprintf(w, "%s%s: %d hits, first at script %d, %d ops: %s\n", prefix, f.Signature, f.Hits, f.Index, f.Ops, f.Script)
	}
	for _, c := range res.Causes {
		if len(c.Signatures) == 1 {
			line("found ", found[c.Signatures[0].Signature])
			continue
		}
		fmt.Fprintf(w, "found one cause, %s: %d hits under %d signatures:\n", c.Key, c.Hits, len(c.Signatures))
		for _, s := range c.Signatures {
			line("  ", found[s.Signature])
		}
	}
}
