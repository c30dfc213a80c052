package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func complexityCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("complexity", flag.ContinueOnError)
	workload := fs.String("workload", "", fmt.Sprintf("workload to measure: one of %v, or a pattern file (FILE.perf, as ipcfuzz worst writes)", ops.Workloads))
	sizesFlag := fs.String("sizes", "", "sizes: a doubling range lo..hi (k = 1024) or a list a,b,c (default: the workload's)")
	metricFlag := fs.String("metric", "both", "what to show and plot: wall, counter or both")
	plotFile := fs.String("plot", "", "write a log-log plot to FILE.svg or FILE.png")
	format := fs.String("format", "table", "output: table, json or benchstat")
	reps := fs.Int("reps", 5, "repetitions of the measured part per size")
	counter := fs.String("counter", "", "the counter shown and fitted: a name, or a ratio a/b of two (default: each implementation's primary one)")
	var sf sideFlags
	sf.notes = stderr
	sf.register(fs, 10*time.Minute)
	names, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageError{"complexity needs at least one implementation: ipcfuzz complexity IMPL... --workload W"}
	}
	w, label, err := parseWorkloadFlag(*workload)
	if err != nil {
		return err
	}
	if *sizesFlag == "" {
		*sizesFlag = defaultPatternSizes
		if spec, err := ops.WorkloadOf(w); err == nil {
			*sizesFlag = spec.Sizes
		}
	}
	sizes, err := complexity.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := ops.CheckMeasure(w, sizes[len(sizes)-1], 1); ops.IsPattern(w) && err != nil {
		return usageError{fmt.Sprintf("--workload %s: %v", label, err)}
	}
	metric := complexity.Metric(*metricFlag)
	if metric != complexity.Wall && metric != complexity.Counter && metric != complexity.Both {
		return usageError{fmt.Sprintf("--metric %q: want wall, counter or both", *metricFlag)}
	}
	if *format != "table" && *format != "json" && *format != "benchstat" {
		return usageError{fmt.Sprintf("--format %q: want table, json or benchstat", *format)}
	}
	if ext := filepath.Ext(*plotFile); *plotFile != "" && ext != ".svg" && ext != ".png" {
		return usageError{fmt.Sprintf("--plot %s: want a .svg or .png file", *plotFile)}
	}
	if *reps < 1 || *reps > 1000 {
		return usageError{"--reps must be in 1..1000"}
	}
	var subjects []complexity.Subject
	for _, n := range names {
		s, _, err := sf.open(context.WithoutCancel(ctx), n)
		if err != nil {
			return err
		}
		defer s.Impl.Close()
		subjects = append(subjects, complexity.Subject{Name: s.Name, Impl: s.Impl, Config: s.Config})
	}
	rep, err := complexity.Run(ctx, subjects, w, sizes, *reps, *counter, stderr)
	if err != nil {
		return err
	}
	rep.Label = label
	if *plotFile != "" {
		pm := metric
		if pm == complexity.Both {
			pm = complexity.Wall
		}
		if err := complexity.Plot(rep, pm, *plotFile); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "ipcfuzz: plot written to %s\n", *plotFile)
	}
	switch *format {
	case "json":
		return complexity.WriteJSON(stdout, rep)
	case "benchstat":
		return complexity.WriteBenchstat(stdout, rep)
	}
	return complexity.WriteTable(stdout, rep, metric)
}

// defaultPatternSizes are the sizes a pattern file is measured at when
// --sizes is not given.
const defaultPatternSizes = "16..1024"

// parseWorkloadFlag reads --workload: a workload's name, or the path of a
// pattern file (it ends in .perf or names a file), read strictly. It
// returns the workload and its label (the file's base name without .perf,
// or "" for a named workload).
func parseWorkloadFlag(v string) (ops.Workload, string, error) {
	if !strings.HasSuffix(v, ".perf") && !strings.ContainsRune(v, '/') {
		w, err := ops.ParseWorkload(v)
		if err != nil {
			return "", "", usageError{err.Error() + ", or a pattern file FILE.perf"}
		}
		return w, "", nil
	}
	f, err := os.Open(v)
	if err != nil {
		return "", "", inputError{fmt.Errorf("--workload: %w", err)}
	}
	defer f.Close()
	p, err := ops.ParsePattern(v, io.LimitReader(f, maxPatternFile))
	if err != nil {
		return "", "", inputError{err}
	}
	return ops.PatternWorkload(p), strings.TrimSuffix(filepath.Base(v), ".perf"), nil
}

// maxPatternFile bounds what is read of a pattern file.
const maxPatternFile = 1 << 20
