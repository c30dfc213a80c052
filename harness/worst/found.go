package worst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Summary is what a search found, as one JSON object (ipcfuzz worst
// --json).
type Summary struct {
	A         string             `json:"a"`
	Vs        string             `json:"vs,omitempty"`
	Subsystem string             `json:"subsystem"`
	Metric    string             `json:"metric"`
	Seed      uint64             `json:"seed"`
	Found     bool               `json:"found"`
	Pattern   string             `json:"pattern,omitempty"`
	File      string             `json:"file,omitempty"`
	Search    Score              `json:"search"`
	Report    *complexity.Report `json:"report,omitempty"`
	Ratio     *complexity.Fit    `json:"ratio,omitempty"`
	Evaluated int                `json:"evaluated"`
	Invalid   int                `json:"invalid"`
	Removed   int                `json:"removed"`
	CutShort  bool               `json:"cut_short"`
	Seconds   float64            `json:"seconds"`
}

// Summarize is the summary of a search's result, before its pattern is
// measured again.
func Summarize(o Options, res *Result) Summary {
	s := Summary{A: o.A.Name, Subsystem: o.Subsystem, Metric: MetricLabel(o.Metric), Seed: o.Seed,
		Found: res.Found, Evaluated: res.Evaluated, Invalid: res.Invalid, Removed: res.Removed, CutShort: res.CutShort, Seconds: res.Seconds}
	if o.B != nil {
		s.Vs = o.B.Name
	}
	if res.Found {
		s.Pattern, s.Search = ops.FormatPattern(res.Best.Pattern), res.Best.Score
	}
	return s
}

// NoScore says why no candidate of a search had a score.
func NoScore(metric string) string {
	if metric == Wall {
		return "every candidate failed or took no time"
	}
	return fmt.Sprintf("the metric %s was missing or 0 at some size in every candidate (see ipcfuzz complexity --format json for what each implementation counts)", MetricLabel(metric))
}

// VaryLimit says what bounds the sizes of a pattern.
func VaryLimit(p ops.Pattern) string {
	for i := range p.Body {
		if p.VaryOf(i).Task {
			return fmt.Sprintf("task=t$i: one task per repetition, t1..t%d", ops.MaxTask)
		}
	}
	for i := range p.Body {
		if p.VaryOf(i).Page > 0 {
			return fmt.Sprintf("$i pages within a window of %d pages", ops.VMAPatternPages)
		}
	}
	return "the work of its body"
}

// Found is a found pattern measured again at the report's sizes: the
// report, its table (with the ratio of A's cost to B's when there is a
// B), and the name its files take.
type Found struct {
	Pattern ops.Pattern
	Name    string
	Metric  complexity.Metric
	Counter string
	Report  *complexity.Report
	Ratio   *complexity.Fit
	Table   string
}

// Remeasure measures the pattern on the search's sides at the sizes of
// sizes it fits (SizesFor).
func Remeasure(ctx context.Context, o Options, p ops.Pattern, sizes []int) (*Found, error) {
	subjects := []complexity.Subject{o.A}
	if o.B != nil {
		subjects = append(subjects, *o.B)
	}
	f := &Found{Pattern: p, Name: Name(o.Subsystem, o.A.Name, p), Metric: complexity.Counter, Counter: o.Metric}
	reps := 1
	if o.Metric == Wall {
		f.Metric, f.Counter, reps = complexity.Wall, "", o.Reps
	}
	sizes = SizesFor(p, sizes)
	rep, err := complexity.Run(ctx, subjects, ops.PatternWorkload(p), sizes, reps, f.Counter, nil)
	if err != nil {
		return nil, fmt.Errorf("measuring the found pattern at %v: %w", sizes, err)
	}
	rep.Label = f.Name
	f.Report = rep
	if o.B != nil {
		if r, ok := ratioFit(rep, f.Metric); ok {
			f.Ratio = &r
		}
	}
	var table strings.Builder
	if err := complexity.WriteTable(&table, rep, f.Metric); err != nil {
		return nil, err
	}
	if f.Ratio != nil {
		fmt.Fprintf(&table, "  %s/%s ratio %s\n", o.A.Name, o.B.Name, f.Ratio)
	}
	f.Table = table.String()
	return f, nil
}

// Measure is the command that measures the pattern file in dir again.
func (f *Found) Measure(dir string) string {
	var names []string
	for _, s := range f.Report.Impls {
		names = append(names, s.Name)
	}
	cmd := "ipcfuzz complexity " + strings.Join(names, " ") + " --workload " + filepath.Join(dir, f.Name+".perf") + " --metric " + string(f.Metric)
	if f.Counter != "" {
		cmd += " --counter " + f.Counter
	}
	return cmd
}

// Write writes the pattern (NAME.perf, with header comment lines), its
// table (NAME.txt) and its plot (NAME.svg) into dir, which must exist,
// and returns the pattern file. A plot that cannot be drawn is no error:
// noPlot says why.
func (f *Found) Write(dir string, header ...string) (file string, noPlot, err error) {
	file = filepath.Join(dir, f.Name+".perf")
	if err := os.WriteFile(file, []byte(ops.FormatPattern(f.Pattern, header...)), 0o644); err != nil {
		return "", nil, fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.Name+".txt"), []byte(f.Table), 0o644); err != nil {
		return "", nil, fmt.Errorf("writing the table: %w", err)
	}
	return file, complexity.Plot(f.Report, f.Metric, filepath.Join(dir, f.Name+".svg")), nil
}

// Name names a found pattern's files: subsystem, implementation, and a
// hash of the pattern.
func Name(sub, impl string, p ops.Pattern) string {
	h := sha256.Sum256([]byte(ops.FormatPattern(p)))
	base := strings.Map(func(r rune) rune {
		if r == '/' || r == '.' || r == ':' || r == '=' || r == ',' || r == ' ' {
			return '_'
		}
		return r
	}, filepath.Base(impl))
	return fmt.Sprintf("%s-%s-%s", sub, strings.Trim(base, "_"), hex.EncodeToString(h[:4]))
}

// ratioFit fits the ratio of the first series' shown values to the
// second's.
func ratioFit(r *complexity.Report, metric complexity.Metric) (complexity.Fit, bool) {
	if len(r.Impls) < 2 {
		return complexity.Fit{}, false
	}
	a, b := r.Impls[0], r.Impls[1]
	samples := make([][]float64, len(r.Sizes))
	for i := range r.Sizes {
		var x, y float64
		if metric == complexity.Wall {
			x, y = float64(a.WallNs[i]), float64(b.WallNs[i])
		} else {
			if a.ShownValues == nil || b.ShownValues == nil {
				return complexity.Fit{}, false
			}
			x, y = a.ShownValues[i], b.ShownValues[i]
		}
		if y == 0 {
			return complexity.Fit{}, false
		}
		samples[i] = []float64{x / y}
	}
	return complexity.FitSeries(r.Sizes, samples), true
}
