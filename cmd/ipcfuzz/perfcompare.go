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
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/perf"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
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

func (f *perfFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "perf", false, "compare how the costs grow instead of the results: B growing faster than A on a script's repeated part is a finding")
	fs.StringVar(&f.metric, "metric", "", "--perf: a counter, a ratio A/B of two counters, or wall (default: each side's primary counter)")
	fs.Float64Var(&f.threshold, "threshold", perf.DefaultThreshold, "--perf: report B when its exponent's interval lies above A's by more than this")
	fs.StringVar(&f.sizes, "sizes", perf.DefaultSizes, "--perf: the sizes every repeated part is measured at")
	f.reps = 5
	fs.Var(positiveInt{&f.reps}, "reps", "--perf: repetitions per size of a wall-time measurement")
	fs.StringVar(&f.workload, "workload", "", "--perf: judge this pattern file (a performance finding) again instead of drawing scripts")
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
		return usageError{strings.Join(bad, ", ") + " only with --perf"}
	}
	return nil
}

// perfFinding is one signature a --perf run found.
type perfFinding struct {
	runner.Finding
	path string
	f    *perf.Finding
}

// perfSummary is compare --perf's JSON object: compare's keys (what the
// nightly shards read), with the performance findings as findings.
type perfSummary struct {
	*runner.Result
	Performance int     `json:"performance"`
	Patterns    int     `json:"patterns"`
	Threshold   float64 `json:"threshold"`
	Sizes       []int   `json:"sizes"`
	Metric      string  `json:"metric"`
}

func perfCompareCmd(ctx context.Context, c *compareArgs, stdout, stderr io.Writer) error {
	sizes, err := complexity.ParseSizes(c.perf.sizes)
	if err != nil {
		return usageError{"--sizes: " + err.Error()}
	}
	o := perf.Options{Metric: c.perf.metric, Sizes: sizes, Reps: c.perf.reps, Threshold: c.perf.threshold}
	if c.perf.metric != worst.Wall {
		o.Reps = 1
	}
	if err := o.Check(); err != nil {
		return usageError{err.Error()}
	}
	if err := corpus.CheckWritable(c.opts.Corpus); err != nil {
		return err
	}
	setup := context.WithoutCancel(ctx)
	c.sides.notes = stderr
	pair, closeAll, err := c.sides.openPair(setup, c.a, c.b, c.sub, c.rel)
	if err != nil {
		return err
	}
	defer closeAll()
	for _, s := range []runner.Side{pair.A, pair.B} {
		if c.perf.metric != worst.Wall && !s.Info.Counters {
			return usageError{fmt.Sprintf("%s counts nothing: compare --perf with it needs --metric wall", s.Name)}
		}
	}
	o.A = complexity.Subject{Name: pair.A.Name, Impl: pair.A.Impl, Config: pair.A.Config}
	o.B = complexity.Subject{Name: pair.B.Name, Impl: pair.B.Impl, Config: pair.B.Config}
	if c.perf.workload != "" {
		return perfReplay(ctx, c, o, stdout)
	}
	command := fmt.Sprintf("ipcfuzz compare %s %s --perf --subsystem %s --engine %s --seed %d --sizes %s --threshold %g",
		c.a, c.b, c.sub.Name, c.engine, c.opts.Seed, joinInts(sizes), o.Threshold)
	if c.perf.metric != "" {
		command += " --metric " + c.perf.metric
	}
	fmt.Fprintf(stderr, "ipcfuzz: %s\n", command)
	version, revision := buildVersion()
	res := &runner.Result{A: pair.A.Name, B: pair.B.Name, Subsystem: c.sub.Name, Scripts: []string{}, Findings: []runner.Finding{}, Causes: []runner.Cause{},
		Expected: []runner.Expected{}, StaleKnown: []*corpus.KnownEntry{}, Seed: c.opts.Seed, Engine: c.engine, Relation: string(pair.Relation), Kernel: pair.KernelRelease(), KernelA: runner.Release(pair.A), KernelB: runner.Release(pair.B), Events: []runner.Event{}}
	sum := perfSummary{Result: res, Threshold: o.Threshold, Sizes: sizes, Metric: metricLabel(c.perf.metric)}
	start := time.Now()
	var deadline time.Time
	if c.opts.Duration > 0 {
		deadline = start.Add(c.opts.Duration)
	}
	found := map[string]*perfFinding{}
	var order []string
	report := stdout
	if c.asJSON {
		report = stderr
	}
	stop := false
	for i := 0; !stop && (c.opts.Checks == 0 || i < c.opts.Checks) && (deadline.IsZero() || time.Now().Before(deadline)); i++ {
		seed := runner.ScriptSeed(c.opts.Seed, i)
		script := c.opts.Source.Next(seed)
		for _, p := range perf.Cuts(c.sub.Name, script, sizes[len(sizes)-1]) {
			v, err := perf.Judge(ctx, o, p)
			if err != nil {
				if ctx.Err() != nil {
					res.Interrupted, stop = true, true
					break
				}
				return err
			}
			sum.Patterns++
			res.Ops += perfOps(p)
			if !v.Slower {
				continue
			}
			sig := perf.Signature(p)
			if pf, ok := found[sig]; ok {
				pf.Hits++
				continue
			}
			pf, err := recordPerf(ctx, c, o, pair, command, version, revision, i, seed, v, report)
			if err != nil {
				if ctx.Err() != nil {
					res.Interrupted, stop = true, true
					break
				}
				return err
			}
			found[sig], order = pf, append(order, sig)
			if !c.opts.KeepGoing {
				stop = true
				break
			}
		}
		if !res.Interrupted {
			res.Checks++
		}
	}
	for _, sig := range order {
		pf := found[sig]
		if pf.Hits > 1 && pf.path != "" {
			pf.f.Hits = pf.Hits
			if err := corpus.WriteFileAtomic(pf.path, []byte(perf.Render(pf.f)), 0o644); err != nil {
				fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
			}
		}
		res.Findings = append(res.Findings, pf.Finding)
		if pf.path != "" {
			res.Scripts = append(res.Scripts, pf.path)
		} else {
			res.Unstored++
		}
	}
	sum.Performance = len(order)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	if c.asJSON {
		if err := json.NewEncoder(stdout).Encode(sum); err != nil {
			return err
		}
	} else {
		note := ""
		if res.Interrupted {
			note = " (interrupted)"
		}
		fmt.Fprintf(stdout, "%s vs %s (%s, --perf, seed %d, sizes %v, threshold n^%g): %d scripts, %d patterns judged in %.1fs: %d performance findings%s\n",
			sideLabel(res.A, res.KernelA), sideLabel(res.B, res.KernelB), res.Subsystem, c.opts.Seed, sizes, o.Threshold, res.Checks, sum.Patterns, res.Seconds, sum.Performance, note)
		for _, sig := range order {
			fmt.Fprintf(stdout, "found %s: %d hits, first at script %d: %s\n", sig, found[sig].Hits, found[sig].Index, found[sig].Script)
		}
	}
	switch {
	case sum.Performance > 0:
		return foundError{fmt.Sprintf("%d performance findings: %s", sum.Performance, strings.Join(res.Scripts, " "))}
	case res.Interrupted:
		return interruptedError{fmt.Sprintf("interrupted after %d scripts; nothing found so far", res.Checks)}
	}
	return nil
}

// recordPerf minimises a verdict, measures the table, writes the finding and
// prints it.
func recordPerf(ctx context.Context, c *compareArgs, o perf.Options, pair *runner.Pair, command, version, revision string,
	index int, seed uint64, v perf.Verdict, report io.Writer) (*perfFinding, error) {
	v, removed, err := perf.Minimize(ctx, o, v)
	if err != nil {
		return nil, err
	}
	sig := perf.Signature(v.Pattern)
	metric, counter, reps := complexity.Counter, c.perf.metric, 1
	if c.perf.metric == worst.Wall {
		metric, counter, reps = complexity.Wall, "", o.Reps
	}
	rep, err := complexity.Run(ctx, []complexity.Subject{o.A, o.B}, ops.PatternWorkload(v.Pattern), o.Sizes, reps, counter, nil)
	if err != nil {
		return nil, fmt.Errorf("measuring the found pattern: %w", err)
	}
	var table strings.Builder
	if err := complexity.WriteTable(&table, rep, metric); err != nil {
		return nil, err
	}
	f := &perf.Finding{Verdict: v, Removed: removed, Table: table.String(), Metric: metricLabel(c.perf.metric), Threshold: o.Threshold}
	f.Header = perfHeader(c, pair, command, version, revision, index, seed, sig)
	path, storeErr := "", error(nil)
	f.Replay = fmt.Sprintf("ipcfuzz compare %s %s --perf --subsystem %s --sizes %s --threshold %g", c.a, c.b, c.sub.Name, joinInts(o.Sizes), o.Threshold)
	if c.perf.metric != "" {
		f.Replay += " --metric " + c.perf.metric
	}
	f.Replay += " --workload FILE"
	if path, storeErr = perf.Store(c.opts.Corpus, f); storeErr == nil {
		f.Replay = strings.Replace(f.Replay, "FILE", path, 1)
		if err := corpus.WriteFileAtomic(path, []byte(perf.Render(f)), 0o644); err != nil {
			storeErr = err
		}
	}
	text := perf.Render(f)
	pf := &perfFinding{Finding: runner.Finding{Signature: sig, Kind: perf.Kind, Script: path, Index: index, Ops: perfOps(v.Pattern), Hits: 1}, path: path, f: f}
	if storeErr != nil {
		pf.Text, pf.StoreError = text, storeErr.Error()
		fmt.Fprintf(report, "ipcfuzz: the finding could not be stored (%v); here it is in full:\n%s", storeErr, text)
		return pf, nil
	}
	fmt.Fprintf(report, "performance finding %s (script %d): %s\n%s\n%swritten: %s\n", sig, index, v, indent(ops.FormatPattern(v.Pattern)), table.String(), path)
	return pf, nil
}

func perfHeader(c *compareArgs, pair *runner.Pair, command, version, revision string, index int, seed uint64, sig string) (h corpus.Header) {
	h.Kind, h.Format, h.Version, h.Revision = perf.Kind, 2, version, revision
	h.Date = time.Now().UTC().Format(time.RFC3339)
	h.Command, h.Seed, h.Index, h.ScriptSeed, h.HasSeed = command, c.opts.Seed, index, seed, true
	h.Engine, h.Relation = c.engine, string(pair.Relation)
	h.A, h.B = c.a, c.b
	h.AInfo = pair.A.Info.Name + " " + pair.A.Info.Version
	h.BInfo = pair.B.Info.Name + " " + pair.B.Info.Version
	h.Kernel, h.Facts, h.Signature, h.Hits = pair.KernelRelease(), pair.Facts().String(), sig, 1
	return h
}

// perfReplay judges a pattern file again: exit 1 when B still grows faster.
func perfReplay(ctx context.Context, c *compareArgs, o perf.Options, stdout io.Writer) error {
	text, err := os.ReadFile(c.perf.workload)
	if err != nil {
		return inputError{fmt.Errorf("--workload: %w", err)}
	}
	p, err := ops.ParsePattern(c.perf.workload, strings.NewReader(string(text)))
	if err != nil {
		return inputError{err}
	}
	if p.Subsystem != c.sub.Name {
		return usageError{fmt.Sprintf("%s is a pattern of %s, not of --subsystem %s", c.perf.workload, p.Subsystem, c.sub.Name)}
	}
	if !worst.Fits(p, o.Sizes[len(o.Sizes)-1]) {
		return usageError{fmt.Sprintf("%s cannot be measured at n=%d (at most %d)", c.perf.workload, o.Sizes[len(o.Sizes)-1], p.MaxN())}
	}
	v, err := perf.Judge(ctx, o, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s vs %s: %s\n", c.perf.workload, o.A.Name, o.B.Name, v)
	if v.Slower {
		return foundError{fmt.Sprintf("%s grows faster than %s on %s by at least n^%.2f (threshold n^%g)", o.B.Name, o.A.Name, c.perf.workload, v.Excess, o.Threshold)}
	}
	if v.Invalid != "" {
		return errors.New(v.Invalid)
	}
	return nil
}

func perfOps(p ops.Pattern) int { return len(p.Setup) + len(p.Body) + len(p.Tail) }

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
