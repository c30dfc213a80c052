package complexity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"gonum.org/v1/gonum/stat"
)

// Metric selects what a table or plot shows.
type Metric string

// The metrics.
const (
	Wall    Metric = "wall"
	Counter Metric = "counter"
	Both    Metric = "both"
)

// WriteTable writes a row per size (N, then milliseconds and the primary
// counter per implementation), then each implementation's exponent and class,
// then the verdict.
func WriteTable(w io.Writer, r *Report, metric Metric) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	head := []string{"N"}
	if r.Levels != nil {
		head = append(head, "levels")
	}
	for _, s := range r.Impls {
		if metric != Counter {
			head = append(head, s.Name+" ms")
		}
		if metric != Counter && r.PerRun > 0 {
			head = append(head, fmt.Sprintf("%s ns/%s [95%%]", s.Name, r.Unit))
		}
		if metric != Wall && s.Shown != "" {
			head = append(head, s.Name+" "+s.Shown)
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i, n := range r.Sizes {
		row := []string{fmt.Sprint(n)}
		if r.Levels != nil {
			row = append(row, fmt.Sprint(r.Levels[i]))
		}
		for _, s := range r.Impls {
			if metric != Counter {
				row = append(row, fmt.Sprintf("%.3f", float64(s.WallNs[i])/1e6))
			}
			if metric != Counter && r.PerRun > 0 {
				m, lo, hi := perUnit(s.WallReps[i], r.PerRun)
				row = append(row, fmt.Sprintf("%.1f [%.1f, %.1f]", m, lo, hi))
			}
			if metric != Wall && s.Shown != "" {
				row = append(row, formatCount(s.ShownValues[i]))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s, %d sizes, wall = median of %d repetitions measured inside each implementation\n", r.Name(), len(r.Sizes), r.Reps)
	for _, s := range r.Impls {
		if metric != Counter && s.Fit.Wall != nil {
			fmt.Fprintf(w, "  %-12s wall    %s\n", s.Name, s.Fit.Wall)
		}
		if metric != Wall && s.Fit.Counter != nil {
			fmt.Fprintf(w, "  %-12s %-7s %s\n", s.Name, s.Shown, s.Fit.Counter)
		}
	}
	for _, v := range Verdicts(r, metric) {
		fmt.Fprintln(w, v)
	}
	if r.Levels != nil && r.PerRun > 0 && metric != Counter {
		for _, s := range r.Impls {
			fmt.Fprintln(w, perLevel(r, s))
		}
	}
	return nil
}

// formatCount writes a counter as an integer, or a ratio of counters with
// four significant digits.
func formatCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// perUnit is the mean cost of one unit over the repetitions of one size,
// in ns, with its 95% interval.
func perUnit(reps []int64, per int) (mean, lo, hi float64) {
	v := make([]float64, len(reps))
	for i, x := range reps {
		v[i] = float64(x) / float64(per)
	}
	mean = stat.Mean(v, nil)
	if len(v) < 2 {
		return mean, mean, mean
	}
	h := tQuantile(len(v)-1) * stat.StdDev(v, nil) / math.Sqrt(float64(len(v)))
	return mean, mean - h, mean + h
}

// perLevel fits the cost of one unit against the id tree's height: what one
// more level costs.
func perLevel(r *Report, s Series) string {
	var xs, ys []float64
	for i := range r.Sizes {
		for _, x := range s.WallReps[i] {
			xs = append(xs, float64(r.Levels[i]))
			ys = append(ys, float64(x)/float64(r.PerRun))
		}
	}
	slope, se := ols(xs, ys)
	t := tQuantile(len(xs) - 2)
	return fmt.Sprintf("  %-12s %+.2f ns per %s for each more tree level [%.2f, %.2f]", s.Name, slope, r.Unit, slope-t*se, slope+t*se)
}

// Verdicts compares the implementations' growth, per metric.
func Verdicts(r *Report, metric Metric) []string {
	var out []string
	pick := func(name string, get func(Series) (*Fit, []float64)) {
		type entry struct {
			name string
			fit  Fit
			last float64
		}
		var es []entry
		for _, s := range r.Impls {
			f, vals := get(s)
			if f != nil {
				es = append(es, entry{s.Name, *f, vals[len(vals)-1]})
			}
		}
		if len(es) < 2 {
			return
		}
		var fitted []entry
		for _, e := range es {
			if e.fit.Fitted() {
				fitted = append(fitted, e)
			} else {
				out = append(out, fmt.Sprintf("verdict (%s): %s: %s", name, e.name, e.fit.Note))
			}
		}
		sort.SliceStable(fitted, func(i, j int) bool { return fitted[i].fit.Exponent > fitted[j].fit.Exponent })
		for i := 0; i+1 < len(fitted); i++ {
			a, b := fitted[i], fitted[i+1]
			same := a.fit.CI[0] <= b.fit.CI[1] && b.fit.CI[0] <= a.fit.CI[1]
			rel := fmt.Sprintf("grows faster than %s by n^%.2f", b.name, a.fit.Exponent-b.fit.Exponent)
			if same {
				rel = fmt.Sprintf("grows like %s (intervals overlap)", b.name)
			}
			ratio := ""
			if b.last > 0 {
				ratio = fmt.Sprintf("; at n=%d %s/%s = %.3gx", r.Sizes[len(r.Sizes)-1], a.name, b.name, a.last/b.last)
			}
			out = append(out, fmt.Sprintf("verdict (%s): %s %s %s%s", name, a.name, a.fit.Class, rel, ratio))
		}
	}
	if metric != Counter {
		pick("wall", func(s Series) (*Fit, []float64) { return s.Fit.Wall, floats(s.WallNs) })
	}
	if metric != Wall {
		pick("counter", func(s Series) (*Fit, []float64) {
			if s.Shown == "" {
				return nil, nil
			}
			return s.Fit.Counter, s.ShownValues
		})
	}
	return out
}

// WriteJSON writes the report as one JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	return enc.Encode(r)
}

// WriteBenchstat writes every repetition as a Go benchmark result line, the
// input format of golang.org/x/perf/cmd/benchstat:
// BenchmarkProcReadShm/impl=naive/n=1024 1 2100000 ns/op 524800 probes/op.
func WriteBenchstat(w io.Writer, r *Report) error {
	name := "Benchmark" + camel(benchName(r.Name()))
	fmt.Fprintf(w, "goos: linux\npkg: github.com/ipcfuzz/ipcfuzz\n")
	for _, s := range r.Impls {
		for i, n := range r.Sizes {
			for _, ns := range s.WallReps[i] {
				line := fmt.Sprintf("%s/impl=%s/n=%d 1 %d ns/op", name, benchName(s.Name), n, ns)
				keys := make([]string, 0, len(s.Counters))
				for k := range s.Counters {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					line += fmt.Sprintf(" %d %s/op", s.Counters[k][i], k)
				}
				if _, err := fmt.Fprintln(w, line); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// camel turns "proc-read-shm" into "ProcReadShm".
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '-' || r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// benchName keeps a name usable as a benchmark key (no spaces, '/' or '=').
func benchName(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '/' || r == '=' {
			return '_'
		}
		return r
	}, s)
}
