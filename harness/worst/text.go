package worst

import (
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// CommandLine is the command line of a search of a (held against vs, ""
// for none) with o's subsystem, metric, seed and candidates: what
// reproduces it.
func CommandLine(a, vs string, o Options) string {
	command := fmt.Sprintf("ipcfuzz worst %s", a)
	if vs != "" {
		command += " --vs " + vs
	}
	command += fmt.Sprintf(" --subsystem %s", o.Subsystem)
	if o.Metric != "" {
		command += " --metric " + o.Metric
	}
	return command + fmt.Sprintf(" --seed %d --candidates %d", o.Seed, o.Candidates)
}

// WriteSteepest says how the found pattern of res grows, and what bounded
// its fit.
func WriteSteepest(w io.Writer, o Options, res *Result) {
	best := res.Best
	what := fmt.Sprintf("%s %s per measured operation", o.A.Name, MetricLabel(o.Metric))
	if o.B != nil {
		what = fmt.Sprintf("%s/%s of %s per measured operation", o.A.Name, o.B.Name, MetricLabel(o.Metric))
	}
	fmt.Fprintf(w, "steepest: %s grows %s over n=%v (%d operations removed by minimisation)\n", what, best.Score.Fit, best.Score.Sizes, res.Removed)
	if len(best.Score.Sizes) < len(o.Sizes) || best.Score.Sizes[len(best.Score.Sizes)-1] < o.Sizes[len(o.Sizes)-1] {
		fmt.Fprintf(w, "note: the fit had %d points only, n <= %d: what the pattern's body takes (%s)\n", len(best.Score.Sizes), best.Pattern.MaxN(), VaryLimit(best.Pattern))
	}
	if best.Score.Note != "" {
		fmt.Fprintf(w, "note: %s\n", best.Score.Note)
	}
}

// Shown is the pattern, its table and where its files were written (file,
// from Write), as ipcfuzz worst prints them.
func (f *Found) Shown(file string) string {
	return fmt.Sprintf("\n%s\n%s\nwritten: %s (the table in %s.txt, the plot in %s.svg)\n", Indent(ops.FormatPattern(f.Pattern)), f.Table, file, f.Name, f.Name)
}

// Indent indents every line of s by two spaces, without a final newline.
func Indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// WriteSearched says how many candidates the search measured and in how
// long, whether its budget cut it short, and, when none had a score, why.
func WriteSearched(w io.Writer, o Options, res *Result) {
	cut := ""
	if res.CutShort {
		cut = fmt.Sprintf("; the budget of %s ended it before %d candidates, so another run may find another pattern", o.Budget, o.Candidates)
	}
	fmt.Fprintf(w, "%d candidates measured (%d without a score) in %.1fs%s\n", res.Evaluated, res.Invalid, res.Seconds, cut)
	if !res.Found {
		fmt.Fprintf(w, "no candidate had a score: %s\n", NoScore(o.Metric))
	}
}
