package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
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
	sides        sideFlags
}

func parseComplexity(args []string, stderr io.Writer) (*complexityArgs, error) {
	c := &complexityArgs{}
	fs := flag.NewFlagSet("complexity", flag.ContinueOnError)
	workload := fs.String("workload", "", fmt.Sprintf("workload to measure: one of %v, or a pattern file (FILE.perf, as ipcfuzz worst writes)", ops.Workloads))
	sizes := fs.String("sizes", "", "sizes: a doubling range lo..hi (k = 1024) or a list a,b,c (default: the workload's)")
	metric := fs.String("metric", "both", "what to show and plot: wall, counter or both")
	fs.StringVar(&c.plot, "plot", "", "write a log-log plot to FILE.svg or FILE.png")
	fs.StringVar(&c.format, "format", "table", "output: table, json or benchstat")
	fs.IntVar(&c.reps, "reps", 5, "repetitions of the measured part per size")
	fs.StringVar(&c.counter, "counter", "", "the counter shown and fitted: a name, or a ratio a/b of two (default: each implementation's primary one)")
	c.sides.notes = stderr
	c.sides.register(fs, 10*time.Minute)
	var err error
	if c.names, err = parseInterspersed(fs, args); err != nil {
		return nil, err
	}
	if len(c.names) == 0 {
		return nil, usageError{"complexity needs at least one implementation: ipcfuzz complexity IMPL... --workload W"}
	}
	if c.w, c.label, err = parseWorkloadFlag(*workload); err != nil {
		return nil, err
	}
	if *sizes == "" {
		*sizes = complexity.DefaultSizes(c.w)
	}
	if c.sizes, err = complexity.ParseSizes(*sizes); err != nil {
		return nil, usageError{err.Error()}
	}
	c.metric = complexity.Metric(*metric)
	return c, c.check(*metric)
}

// check refuses what the flags cannot mean.
func (c *complexityArgs) check(metric string) error {
	if err := ops.CheckMeasure(c.w, c.sizes[len(c.sizes)-1], 1); ops.IsPattern(c.w) && err != nil {
		return usageError{fmt.Sprintf("--workload %s: %v", c.label, err)}
	}
	if c.metric != complexity.Wall && c.metric != complexity.Counter && c.metric != complexity.Both {
		return usageError{fmt.Sprintf("--metric %q: want wall, counter or both", metric)}
	}
	if !slices.Contains(complexity.Formats, c.format) {
		return usageError{fmt.Sprintf("--format %q: want table, json or benchstat", c.format)}
	}
	if ext := filepath.Ext(c.plot); c.plot != "" && ext != ".svg" && ext != ".png" {
		return usageError{fmt.Sprintf("--plot %s: want a .svg or .png file", c.plot)}
	}
	if c.reps < 1 || c.reps > 1000 {
		return usageError{"--reps must be in 1..1000"}
	}
	return nil
}

func complexityCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseComplexity(args, stderr)
	if err != nil {
		return err
	}
	var subjects []complexity.Subject
	for _, n := range c.names {
		s, _, err := c.sides.open(context.WithoutCancel(ctx), n)
		if err != nil {
			return err
		}
		defer s.Impl.Close()
		subjects = append(subjects, complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config})
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
			return "", "", usageError{err.Error() + ", or a pattern file FILE.perf"}
		}
		return w, "", nil
	}
	w, label, err := complexity.ReadPatternFile(v)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		return "", "", inputError{fmt.Errorf("--workload: %w", err)}
	case err != nil:
		return "", "", inputError{err}
	}
	return w, label, nil
}
