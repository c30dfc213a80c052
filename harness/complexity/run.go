package complexity

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Subject is one implementation to measure.
type Subject struct {
	Name   string
	Impl   ops.Impl
	Config ops.Config
}

// Series is what one implementation cost at every size.
type Series struct {
	Name string `json:"name"`
	// WallNs is the median wall time per size; WallReps every repetition.
	WallNs   []int64   `json:"wall_ns"`
	WallReps [][]int64 `json:"wall_ns_reps"`
	// Counters holds each counter per size (for the kernel, only what a
	// workload reads from /proc).
	Counters map[string][]int64 `json:"counters"`
	Primary  string             `json:"primary_counter,omitempty"`
	// Shown is the counter the table, the plot and the counter fit use:
	// the primary one, another one, or a ratio of two ("walks_grow/brk_grow");
	// "" when the implementation does not count it. ShownValues is its
	// value at each size.
	Shown       string    `json:"shown_counter,omitempty"`
	ShownValues []float64 `json:"shown_values,omitempty"`
	Fit         Fits      `json:"fit"`
}

// Fits holds the fit of each metric; a metric the implementation does not
// have is nil.
type Fits struct {
	Wall    *Fit `json:"wall,omitempty"`
	Counter *Fit `json:"counter,omitempty"`
}

// Report is a whole complexity run.
type Report struct {
	Workload ops.Workload `json:"workload"`
	// Label names the workload in tables and plots: a pattern's file
	// name, or "" for the workload's own name (ops.WorkloadLabel).
	Label string   `json:"label,omitempty"`
	Sizes []int    `json:"sizes"`
	Reps  int      `json:"reps"`
	Impls []Series `json:"impls"`
	// PerRun units (Unit) make one run of the measured part: the table
	// then gives the cost of one unit.
	PerRun int    `json:"per_run,omitempty"`
	Unit   string `json:"unit,omitempty"`
	// Levels is the id tree's height at each size, for workloads about it.
	Levels []int `json:"levels,omitempty"`
}

// Run measures the workload at every size on every subject, reps
// repetitions each, and fits the results. counter chooses the counter shown
// and fitted: "" for each implementation's primary one, a counter's name, or
// a ratio "a/b" of two. Progress lines go to progress (nil: none).
func Run(ctx context.Context, subjects []Subject, w ops.Workload, sizes []int, reps int, counter string, progress io.Writer) (*Report, error) {
	rep := &Report{Workload: w, Sizes: sizes, Reps: reps}
	if spec, err := ops.WorkloadOf(w); err == nil {
		rep.PerRun, rep.Unit = spec.PerRun, spec.Unit
		if spec.Levels != nil {
			for _, n := range sizes {
				rep.Levels = append(rep.Levels, spec.Levels(n))
			}
		}
	}
	start := time.Now()
	for _, s := range subjects {
		ser := Series{Name: s.Name, Counters: map[string][]int64{}}
		for i, n := range sizes {
			if progress != nil {
				fmt.Fprintf(progress, "ipcfuzz: %s: %s n=%d (%d/%d), %.1fs elapsed\n", ops.WorkloadLabel(w), s.Name, n, i+1, len(sizes), time.Since(start).Seconds())
			}
			m, err := s.Impl.Measure(ctx, s.Config, w, n, reps)
			if err != nil {
				return nil, fmt.Errorf("%s: %s at n=%d: %w", s.Name, ops.WorkloadLabel(w), n, err)
			}
			ser.WallReps = append(ser.WallReps, m.WallNs)
			ser.WallNs = append(ser.WallNs, int64(Median(floats(m.WallNs))))
			for k, v := range m.Counters {
				if ser.Counters[k] == nil {
					ser.Counters[k] = make([]int64, len(sizes))
				}
				ser.Counters[k][i] = v
			}
			ser.Primary = m.Primary
		}
		wall := FitSeries(sizes, wallSamples(ser.WallReps))
		ser.Fit.Wall = &wall
		if _, ok := ser.Counters[ser.Primary]; !ok {
			ser.Primary = ""
		}
		ser.Shown, ser.ShownValues = shownCounter(ser, counter)
		if ser.Shown != "" {
			samples := make([][]float64, len(sizes))
			for i, v := range ser.ShownValues {
				samples[i] = []float64{v}
			}
			f := FitSeries(sizes, samples)
			ser.Fit.Counter = &f
		}
		rep.Impls = append(rep.Impls, ser)
	}
	if counter != "" {
		for _, s := range rep.Impls {
			if s.Shown != "" {
				return rep, nil
			}
		}
		var have []string
		for _, s := range rep.Impls {
			for k := range s.Counters {
				if !slices.Contains(have, k) {
					have = append(have, k)
				}
			}
		}
		sort.Strings(have)
		return nil, fmt.Errorf("no implementation counts %q (counters: %s)", counter, strings.Join(have, ", "))
	}
	return rep, nil
}

// shownCounter evaluates the counter expression on one series: its values
// at each size, or "" when the series lacks a counter it names.
func shownCounter(s Series, expr string) (string, []float64) {
	if expr == "" {
		expr = s.Primary
	}
	if expr == "" {
		return "", nil
	}
	num, den, ratio := strings.Cut(expr, "/")
	a, ok := s.Counters[num]
	if !ok {
		return "", nil
	}
	out := floats(a)
	if !ratio {
		return expr, out
	}
	b, ok := s.Counters[den]
	if !ok {
		return "", nil
	}
	for i := range out {
		if b[i] == 0 {
			return "", nil
		}
		out[i] /= float64(b[i])
	}
	return expr, out
}

func floats(v []int64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func wallSamples(reps [][]int64) [][]float64 {
	out := make([][]float64, len(reps))
	for i, r := range reps {
		out[i] = floats(r)
	}
	return out
}

// ParseSizes reads "1k..32k" (every power of two from 1024 to 32768),
// "16..1024", or a list "1024,4096,16384". A k suffix means ×1024.
func ParseSizes(s string) ([]int, error) {
	num := func(x string) (int, error) {
		mult := 1
		if strings.HasSuffix(x, "k") {
			mult, x = 1024, strings.TrimSuffix(x, "k")
		}
		v, err := strconv.Atoi(x)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("size %q: want a positive number, optionally with a k suffix", x)
		}
		return v * mult, nil
	}
	var out []int
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b, err := num(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("sizes %q: the range is empty", s)
		}
		if b > ops.MaxMeasureN {
			return nil, fmt.Errorf("size %d out of range 2..%d (one object per idx)", b, ops.MaxMeasureN)
		}
		for n := a; n <= b; n *= 2 {
			out = append(out, n)
		}
	} else {
		for _, x := range strings.Split(s, ",") {
			v, err := num(strings.TrimSpace(x))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		sort.Ints(out)
		for i := 1; i < len(out); i++ {
			if out[i] == out[i-1] {
				return nil, fmt.Errorf("sizes %q: %d is given twice", s, out[i])
			}
		}
	}
	if len(out) < 3 {
		return nil, fmt.Errorf("sizes %q: a growth needs at least 3 distinct sizes, have %d", s, len(out))
	}
	for _, n := range out {
		if n < 2 || n > ops.MaxMeasureN {
			return nil, fmt.Errorf("size %d out of range 2..%d (one object per idx)", n, ops.MaxMeasureN)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("sizes %q: need at least two sizes to fit a growth", s)
	}
	return out, nil
}

// Name is what tables and plots call the workload.
func (r *Report) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return ops.WorkloadLabel(r.Workload)
}
