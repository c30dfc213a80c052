// Command robottable prints a before/after table in the 0-day robot's shape
// from several runs of `ipcfuzz complexity --format json`, each measuring the
// same two implementations (the first is the base, the second the head) at
// the same sizes:
//
//	go run ./ci/robottable [--ratio A/B,...] RUN.json...
//
// Every run is one sample: at each size, the median wall time of its
// repetitions (shown as units per second when the workload names its unit,
// "brk_per_s") and each counter both implementations report (the kernel's
// are per repetition). A ratio A/B divides two counters of each run. The
// columns are the mean of the base's runs, their relative standard
// deviation, the change of the head's mean, the head's mean and deviation,
// and the metric: base %stddev %change head %stddev metric.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
)

type (
	report = complexity.Report
	series = complexity.Series
)

// row is one metric: a value per run on each side.
type row struct {
	metric     string
	base, head []float64
}

func main() {
	ratios := flag.String("ratio", "", "counter ratios to add, A/B,C/D (each run's A divided by its B)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: robottable [--ratio A/B,...] RUN.json...")
		os.Exit(2)
	}
	var runs []report
	for _, path := range flag.Args() {
		r, err := load(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "robottable:", err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	var rs []string
	if *ratios != "" {
		rs = strings.Split(*ratios, ",")
	}
	rows, err := table(runs, rs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "robottable:", err)
		os.Exit(1)
	}
	write(os.Stdout, runs, rows)
}

func load(path string) (report, error) {
	var r report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Impls) != 2 {
		return r, fmt.Errorf("%s: %d implementations, want 2 (base and head)", path, len(r.Impls))
	}
	return r, nil
}

// table builds the rows of runs: per size, the wall time (or units per
// second), every counter both sides have, and the ratios.
func table(runs []report, ratios []string) ([]row, error) {
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Workload != first.Workload || fmt.Sprint(r.Sizes) != fmt.Sprint(first.Sizes) {
			return nil, errors.New("the runs measure different workloads or sizes")
		}
	}
	var rows []row
	for i, n := range first.Sizes {
		at := func(name string, f func(s series) (float64, bool)) {
			rw := row{metric: fmt.Sprintf("%s.n=%d.%s", first.Workload, n, name)}
			for _, r := range runs {
				b, ok1 := f(r.Impls[0])
				h, ok2 := f(r.Impls[1])
				if !ok1 || !ok2 {
					return // a side lacks it: no row
				}
				rw.base = append(rw.base, b)
				rw.head = append(rw.head, h)
			}
			rows = append(rows, rw)
		}
		wallName, wall := "wall_ms", func(s series) (float64, bool) { return float64(s.WallNs[i]) / 1e6, true }
		if first.PerRun > 0 && first.Unit != "" {
			wallName = first.Unit + "_per_s"
			wall = func(s series) (float64, bool) { return float64(first.PerRun) * 1e9 / float64(s.WallNs[i]), true }
		}
		at(wallName, wall)
		var names []string
		for k := range first.Impls[0].Counters {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			at(k, func(s series) (float64, bool) {
				v, ok := s.Counters[k]
				if !ok {
					return 0, false
				}
				return float64(v[i]), true
			})
		}
		for _, q := range ratios {
			num, den, ok := strings.Cut(q, "/")
			if !ok {
				return nil, fmt.Errorf("ratio %q: want A/B", q)
			}
			at(q, func(s series) (float64, bool) {
				a, ok1 := s.Counters[num]
				b, ok2 := s.Counters[den]
				if !ok1 || !ok2 || b[i] == 0 {
					return 0, false
				}
				return float64(a[i]) / float64(b[i]), true
			})
		}
	}
	return rows, nil
}

// meanDev is the mean of v and its sample standard deviation relative to
// the mean, in percent (0 for one sample or a zero mean).
func meanDev(v []float64) (mean, dev float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 || mean == 0 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, 100 * math.Sqrt(ss/float64(len(v)-1)) / math.Abs(mean)
}

func write(w io.Writer, runs []report, rows []row) {
	fmt.Fprintf(w, "base: %s\nhead: %s\n%d runs each, %d repetitions per run\n\n",
		runs[0].Impls[0].Name, runs[0].Impls[1].Name, len(runs), runs[0].Reps)
	fmt.Fprintf(w, "%14s %9s %10s %14s %9s  %s\n", "base", "%stddev", "%change", "head", "%stddev", "metric")
	for _, r := range rows {
		bm, bd := meanDev(r.base)
		hm, hd := meanDev(r.head)
		change := "-"
		if bm != 0 {
			change = fmt.Sprintf("%+.1f%%", 100*(hm-bm)/math.Abs(bm))
		}
		fmt.Fprintf(w, "%14s %9s %10s %14s %9s  %s\n", num(bm), dev(bd), change, num(hm), dev(hd), r.metric)
	}
	if len(runs[0].Sizes) < 2 {
		return
	}
	fmt.Fprintf(w, "\ngrowth over n = %v, each run's fit (exponent [95%% interval]):\n", runs[0].Sizes)
	for i, r := range runs {
		for side, s := range r.Impls {
			if s.Fit.Wall == nil {
				continue
			}
			line := fmt.Sprintf("  run %d %s  wall %s", i+1, []string{"base", "head"}[side], s.Fit.Wall)
			if s.Fit.Counter != nil {
				line += fmt.Sprintf("  %s %s", s.Shown, s.Fit.Counter)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func num(x float64) string {
	if x == math.Trunc(x) || math.Abs(x) >= 1000 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3f", x)
}

func dev(d float64) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("± %.1f%%", d)
}
