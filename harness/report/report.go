// Package report writes findings as one static HTML page: per finding, the
// steps with both sides' results side by side and the first diverging step
// highlighted and linked, one lane per task with the steps it slept
// through and the step that woke it, the final states as a diff, and the
// commands that reproduce it. The page needs no network and no script; it
// reads on a laptop screen and prints to A4.
//
// Porcupine's Visualize is the anchor (compute the picture's data in Go,
// one embedded template); this page is static where porcupine's is
// interactive, so that it prints and mails as it is.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Step is one operation of a finding with both sides' results.
type Step struct {
	N        int    // 1-based
	Task     string // t0..t15
	Op       string
	A, B     string // "-" where a side did not get that far
	Diverges bool
}

// Sleep is a stretch of steps a task slept through on one side: from the
// step that blocked to the step that woke it (Woken false: still asleep
// at the end of the script).
type Sleep struct {
	Side     string // "A" or "B"
	From, To int
	Woken    bool
}

// Lane is one task and where it slept.
type Lane struct {
	Task   string
	Sleeps []Sleep
}

// DiffLine is one line of the final states, A's beside B's.
type DiffLine struct {
	A, B    string
	Differs bool
}

// StateDiff is one group of the final state that differs.
type StateDiff struct {
	Group string
	Lines []DiffLine
}

// Finding is one finding file as the report shows it.
type Finding struct {
	Path      string
	Kind      string // "divergence", "plugin failure", or "script" for a seed
	Title     string
	Subsystem string
	Command   string // how it was found
	Notes     []string
	A, B      string // the sides' names
	Steps     []Step
	First     int // the first diverging step, 0 when the results agree
	Lanes     []Lane
	Final     []StateDiff
	Reproduce []string // commands that reproduce it
}

// Read reads one finding (or any script) file.
func Read(path string) (Finding, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return Finding{}, err
	}
	return Parse(path, string(text))
}

// Parse reads a finding from its text; path names it in errors and in the
// commands that reproduce it.
func Parse(path, text string) (Finding, error) {
	cf, err := corpus.ParseFinding(path, text)
	if err != nil {
		return Finding{}, err
	}
	if err := cf.FillFromTable(text); err != nil {
		return Finding{}, fmt.Errorf("%s: %w", path, err)
	}
	h := cf.Header
	f := Finding{Path: path, Kind: h.Kind, Subsystem: cf.Script.Subsystem, Command: h.Command, A: cf.A.Name, B: cf.B.Name}
	if f.Kind == "" {
		f.Kind = "script"
		f.A = "stated"
	}
	both := len(cf.A.Results) > 0 && len(cf.B.Results) > 0
	steps := cf.Script.Ops()
	f.Notes = append(facts(h), cf.Notes...)
	for _, g := range cf.Final {
		f.Final = append(f.Final, StateDiff{Group: g.Name, Lines: diffLines(lines(g.A), lines(g.B))})
	}
	f.Steps, f.First = stepsOf(steps, cf.A.Results, cf.B.Results, both)
	f.Lanes = lanes(steps, cf.A.Results, cf.B.Results)
	f.Title = title(f, h)
	f.Reproduce = reproduce(path, f, h)
	return f, nil
}

// facts are the header's facts worth a line: where, when and how often.
func facts(h corpus.Header) []string {
	var out []string
	for _, kv := range []struct{ k, v string }{
		{"kernel", h.Kernel}, {"date", h.Date}, {"ipcfuzz", strings.TrimSpace(h.Version + " " + h.Revision)},
		{"side A", h.AInfo}, {"side B", h.BInfo}, {"facts", h.Facts},
	} {
		if kv.v != "" {
			out = append(out, kv.k+": "+kv.v)
		}
	}
	if h.HasSeed {
		out = append(out, fmt.Sprintf("seed %d, script %d (script seed %d), engine %s, relation %s", h.Seed, h.Index, h.ScriptSeed, h.Engine, h.Relation))
	}
	if h.Hits > 0 {
		out = append(out, fmt.Sprintf("hits: %d", h.Hits))
	}
	if h.Flaky {
		out = append(out, "flaky: it did not show again when run again")
	}
	return out
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// stepsOf pairs each operation with both results; with both sides known,
// a step whose texts differ diverges.
func stepsOf(steps []ops.Op, ra, rb []ops.Result, both bool) ([]Step, int) {
	out := make([]Step, len(steps))
	first := 0
	for i, op := range steps {
		s := Step{N: i + 1, Task: fmt.Sprintf("t%d", op.Task), Op: ops.FormatOp(op), A: "-", B: "-"}
		if i < len(ra) {
			s.A = ops.FormatResult(op, ra[i])
		}
		if i < len(rb) {
			s.B = ops.FormatResult(op, rb[i])
		}
		s.Diverges = both && s.A != s.B
		if s.Diverges && first == 0 {
			first = i + 1
		}
		out[i] = s
	}
	return out, first
}

// lanes finds, per task and side, the steps it slept through: from a
// result "blocked" to the completion that names it.
func lanes(steps []ops.Op, ra, rb []ops.Result) []Lane {
	var used [ops.NumTasks]bool
	var sleeps [ops.NumTasks][]Sleep
	for _, side := range []struct {
		name string
		rs   []ops.Result
	}{{"A", ra}, {"B", rb}} {
		var since [ops.NumTasks]int
		for i, op := range steps {
			used[op.Task] = true
			if i >= len(side.rs) {
				break
			}
			r := side.rs[i]
			for _, d := range r.Done {
				if int(d.Task) < ops.NumTasks && since[d.Task] > 0 {
					sleeps[d.Task] = append(sleeps[d.Task], Sleep{Side: side.name, From: since[d.Task], To: i + 1, Woken: true})
					since[d.Task] = 0
				}
			}
			if r.Blocked && int(op.Task) < ops.NumTasks {
				since[op.Task] = i + 1
			}
		}
		for t, s := range since {
			if s > 0 {
				sleeps[t] = append(sleeps[t], Sleep{Side: side.name, From: s, To: len(steps), Woken: false})
			}
		}
	}
	var out []Lane
	for t := range ops.NumTasks {
		if used[t] {
			out = append(out, Lane{Task: fmt.Sprintf("t%d", t), Sleeps: sleeps[t]})
		}
	}
	return out
}

// diffLines sets the lines of two states beside each other, line by line.
func diffLines(a, b []string) []DiffLine {
	out := make([]DiffLine, max(len(a), len(b)))
	for i := range out {
		if i < len(a) {
			out[i].A = a[i]
		}
		if i < len(b) {
			out[i].B = b[i]
		}
		out[i].Differs = out[i].A != out[i].B
	}
	return out
}

func title(f Finding, h corpus.Header) string {
	if h.Signature != "" {
		return h.Signature
	}
	if f.First > 0 {
		s := f.Steps[f.First-1]
		return fmt.Sprintf("%s: step %d: %s: %s -> %s, %s -> %s", f.Subsystem, s.N, s.Op, f.A, s.A, f.B, s.B)
	}
	return filepath.Base(f.Path)
}

// reproduce lists the commands that reproduce a finding.
func reproduce(path string, f Finding, h corpus.Header) []string {
	var out []string
	if h.A != "" && h.B != "" {
		out = append(out, fmt.Sprintf("ipcfuzz replay %s --impls %s,%s --equiv %s", path, h.A, h.B, h.Relation))
	}
	static := " -static" // a VMA reproducer owns the heap, which a static glibc takes for its TLS
	if f.Subsystem == "vma" {
		static = ""
	}
	out = append(out, fmt.Sprintf("ipcfuzz repro %s -o repro.c && cc -O2%s -o repro repro.c && ./repro", path, static))
	if f.Command != "" {
		out = append(out, f.Command)
	}
	return out
}

// Options are what a report shows besides its findings.
type Options struct {
	Title string
	// Plot is an SVG (ipcfuzz complexity --plot) shown at the top: the
	// complexity plot of the run, where one was measured.
	Plot []byte
}

//go:embed report.html.tmpl
var pageText string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"lanesvg": laneSVG,
}).Parse(pageText))

// Write writes the page of the findings to w.
func Write(w io.Writer, fs []Finding, opt Options) error {
	if opt.Title == "" {
		opt.Title = "ipcfuzz findings"
	}
	data := struct {
		Options
		Findings []Finding
		PlotSVG  template.HTML
	}{Options: opt, Findings: fs}
	if len(opt.Plot) > 0 {
		svg, err := inlineSVG(opt.Plot)
		if err != nil {
			return err
		}
		data.PlotSVG = svg
	}
	return page.Execute(w, data)
}

// inlineSVG checks that b is an SVG document and returns its <svg>
// element, to be put in the page as it is.
func inlineSVG(b []byte) (template.HTML, error) {
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("the plot is not an SVG file (no <svg> element)")
	}
	if bytes.Contains(bytes.ToLower(b), []byte("<script")) {
		return "", fmt.Errorf("the plot holds a script: refusing to put it in the page")
	}
	return template.HTML(b[i:]), nil // #nosec: an SVG of ours, checked for scripts
}
