package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// complexityArgs is a parsed complexity command line.
type complexityArgs struct {
	names        []string
	w            ops.Workload
	label        string
	sizes        []int
	metric       complexity.Metric
	plot, format string
	reps         int
	counter      string
	sides        sides.Flags
	// the flags' text, before it is read
	workload, sizesFlag, metricFlag string
}

// flags is complexity's own flag table.
func (c *complexityArgs) flags() []cli.Flag {
	return []cli.Flag{
		cli.Opt("workload", nil, fmt.Sprintf("workload to measure: one of %v, or a pattern file (FILE.perf, as ipcfuzz worst writes)", ops.Workloads), &c.workload),
		cli.Opt("sizes", nil, "sizes: a doubling range lo..hi (k = 1024) or a list a,b,c (default: the workload's)", &c.sizesFlag),
		cli.Opt("metric", "both", "what to show and plot: wall, counter or both", &c.metricFlag),
		cli.Opt("plot", nil, "write a log-log plot to FILE.svg or FILE.png", &c.plot),
		cli.Opt("format", "table", "output: table, json or benchstat", &c.format),
		cli.Opt("reps", 5, "repetitions of the measured part per size", &c.reps),
		cli.Opt("counter", nil, "the counter shown and fitted: a name, or a ratio a/b of two (default: each implementation's primary one)", &c.counter),
	}
}

func parseComplexity(args []string, stderr io.Writer) (*complexityArgs, error) {
	c := &complexityArgs{}
	c.sides.Notes = stderr
	var err error
	if _, c.names, err = parse("complexity", args, c.flags(), c.sides.Rows(10*time.Minute)); err != nil {
		return nil, err
	}
	if len(c.names) == 0 {
		return nil, cli.UsageError{Msg: "complexity needs at least one implementation: ipcfuzz complexity IMPL... --workload W"}
	}
	if c.w, c.label, err = parseWorkloadFlag(c.workload); err != nil {
		return nil, err
	}
	if c.sizesFlag == "" {
		c.sizesFlag = complexity.DefaultSizes(c.w)
	}
	if c.sizes, err = complexity.ParseSizes(c.sizesFlag); err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	c.metric = complexity.Metric(c.metricFlag)
	return c, c.check(c.metricFlag)
}

// check refuses what the flags cannot mean.
func (c *complexityArgs) check(metric string) error {
	if err := ops.CheckMeasure(c.w, c.sizes[len(c.sizes)-1], 1); ops.IsPattern(c.w) && err != nil {
		return cli.Usagef("--workload %s: %v", c.label, err)
	}
	if c.metric != complexity.Wall && c.metric != complexity.Counter && c.metric != complexity.Both {
		return cli.Usagef("--metric %q: want wall, counter or both", metric)
	}
	if !slices.Contains(complexity.Formats, c.format) {
		return cli.Usagef("--format %q: want table, json or benchstat", c.format)
	}
	if ext := filepath.Ext(c.plot); c.plot != "" && ext != ".svg" && ext != ".png" {
		return cli.Usagef("--plot %s: want a .svg or .png file", c.plot)
	}
	return cli.InRange("reps", c.reps, 1, 1000)
}

func complexityCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseComplexity(args, stderr)
	if err != nil {
		return err
	}
	ss, closeAll, err := c.sides.OpenAll(context.WithoutCancel(ctx), c.names...)
	defer closeAll()
	if err != nil {
		return err
	}
	var subjects []complexity.Subject
	for _, s := range ss {
		subjects = append(subjects, subject(s))
	}
	rep, err := complexity.Run(ctx, subjects, c.w, c.sizes, c.reps, c.counter, stderr)
	if err != nil {
		return err
	}
	rep.Label = c.label
	if c.plot != "" {
		pm := c.metric
		if pm == complexity.Both {
			pm = complexity.Wall
		}
		if err := complexity.Plot(rep, pm, c.plot); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "ipcfuzz: plot written to %s\n", c.plot)
	}
	return complexity.Write(stdout, rep, c.format, c.metric)
}

// parseWorkloadFlag reads --workload: a workload's name, or the path of a
// pattern file (complexity.ReadPatternFile). It returns the workload and
// its label ("" for a named workload).
func parseWorkloadFlag(v string) (ops.Workload, string, error) {
	if !complexity.IsPatternFile(v) {
		w, err := ops.ParseWorkload(v)
		if err != nil {
			return "", "", cli.UsageError{Msg: err.Error() + ", or a pattern file FILE.perf"}
		}
		return w, "", nil
	}
	w, label, err := complexity.ReadPatternFile(v)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		return "", "", cli.InputError{Err: fmt.Errorf("--workload: %w", err)}
	case err != nil:
		return "", "", cli.InputError{Err: err}
	}
	return w, label, nil
}

// subject is the side s measured by the complexity engine.
func subject(s runner.Side) complexity.Subject {
	return complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config}
}
