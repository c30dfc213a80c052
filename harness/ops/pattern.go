package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Pattern is a workload written as a script: a setup, a body repeated n
// times (n is the size the workload is measured at), and a measured tail.
// Its text is a script with two more lines:
//
//	subsystem shm
//	h1 = get shm key=0x0 mode=0600 size=4096    (setup, once)
//	repeat n {
//	h2 = get shm key=0x0 mode=0600 size=1       (body, n times)
//	}
//	measure
//	list shm rows                               (tail, measured)
//
// A handle bound in the body names the object of its last repetition. The
// setup and the body are not measured; the tail's counters and wall time
// are. `ipcfuzz worst` finds patterns; `ipcfuzz complexity --workload FILE`
// measures one.
//
// A body operation may change from one repetition to the next (Vary): its
// window range moves by $i pages (map w:2*$i+0+1 rw-: n VMAs), or the i-th
// repetition is issued by task ti (task=t$i: n sleepers).
type Pattern struct {
	Subsystem         string
	Setup, Body, Tail []Op
	// Vary holds each body operation's Vary (nil: none varies).
	Vary []Vary
}

// The limits of a pattern: what user input can grow.
const (
	// MaxPatternOps bounds the operations of one section.
	MaxPatternOps = 256
	// MaxPatternWork bounds the work of one measurement (Cost: an
	// operation is 1, a churn or fill of N is N): n times the body's,
	// and the setup's and the tail's each.
	MaxPatternWork = 1 << 20
)

// patternPrefix starts the text of every pattern, and so the name of a
// pattern workload (PatternWorkload).
const patternPrefix = "subsystem "

// FormatPattern writes the canonical text of a pattern; header lines (each
// written as a comment) come first.
func FormatPattern(p Pattern, header ...string) string {
	var b strings.Builder
	for _, h := range header {
		for _, l := range strings.Split(h, "\n") {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	fmt.Fprintf(&b, "%s%s\n", patternPrefix, p.Subsystem)
	for _, op := range p.Setup {
		b.WriteString(FormatOp(op) + "\n")
	}
	b.WriteString("repeat n {\n")
	for i, op := range p.Body {
		b.WriteString(FormatVaried(op, p.VaryOf(i)) + "\n")
	}
	b.WriteString("}\nmeasure\n")
	for _, op := range p.Tail {
		b.WriteString(FormatOp(op) + "\n")
	}
	return b.String()
}

// ParsePattern reads a pattern, as strictly as Parse reads a script: the
// subsystem line, then setup operations, "repeat n {", the body, "}",
// "measure", the tail. Body and tail need at least one operation each;
// expected results ("->") are refused, since what an operation returns at
// size n is not what it returns at another. name is used in error messages.
func ParsePattern(name string, r io.Reader) (Pattern, error) {
	p := parser{name: name, bound: map[Class]map[int]int{}}
	const (
		inSetup = iota
		inBody
		afterBody
		inTail
	)
	section := inSetup
	var marks [2]int
	var varies []Vary
	anyVary := false
	fail := func(err error) (Pattern, error) { return Pattern{}, &ParseError{name, p.line, err} }
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine)
	for p.line = 1; sc.Scan(); p.line++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "repeat n {":
			if section != inSetup || p.sc.Subsystem == "" {
				return fail(errors.New("'repeat n {' must come once, after the subsystem line and the setup"))
			}
			section, marks[0] = inBody, len(p.sc.Steps)
			continue
		case line == "}":
			if section != inBody {
				return fail(errors.New("'}' closes nothing"))
			}
			section = afterBody
			continue
		case line == "measure":
			if section != afterBody {
				return fail(errors.New("'measure' must come once, right after the repeated body"))
			}
			section, marks[1] = inTail, len(p.sc.Steps)
			continue
		case strings.HasPrefix(line, "repeat"):
			return fail(fmt.Errorf("want 'repeat n {' (the body repeats n times, n the measured size), not %q", clip(line)))
		case line != "" && !strings.HasPrefix(line, "#") && section == afterBody:
			return fail(errors.New("an operation between the body and 'measure'"))
		case strings.Contains(line, "->") && !strings.HasPrefix(line, "#"):
			return fail(errors.New("a pattern states no results (they depend on n)"))
		}
		var v Vary
		if strings.Contains(line, "$") && !strings.HasPrefix(line, "#") {
			if section != inBody {
				return fail(errors.New("$i only in the repeated body"))
			}
			var err error
			if line, v, err = parseVary(line); err != nil {
				return fail(err)
			}
		}
		before := len(p.sc.Steps)
		if err := p.step(line); err != nil {
			return fail(err)
		}
		if section == inBody && len(p.sc.Steps) > before {
			varies, anyVary = append(varies, v), anyVary || !v.IsZero()
		}
		if len(p.sc.Steps) > 3*MaxPatternOps {
			return fail(fmt.Errorf("more than %d operations", 3*MaxPatternOps))
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fail(fmt.Errorf("line longer than %d bytes", MaxLine))
		}
		return Pattern{}, &ParseError{name, 0, fmt.Errorf("reading: %w", err)}
	}
	p.line = 0
	if p.sc.Subsystem == "" {
		return fail(fmt.Errorf("no 'subsystem' line (want one of %s)", strings.Join(Subsystems(), ", ")))
	}
	if section != inTail {
		return fail(errors.New("want 'repeat n {', the body, '}', then 'measure' and the measured tail"))
	}
	all := p.sc.Ops()
	pat := Pattern{Subsystem: p.sc.Subsystem, Setup: all[:marks[0]], Body: all[marks[0]:marks[1]], Tail: all[marks[1]:]}
	if anyVary {
		pat.Vary = varies
	}
	if err := pat.Check(); err != nil {
		return fail(err)
	}
	return pat, nil
}

// ParsePatternString parses a pattern held in a string.
func ParsePatternString(text string) (Pattern, error) {
	return ParsePattern("", strings.NewReader(text))
}

// Check holds a pattern to its limits: a body and a tail, no section longer
// than MaxPatternOps.
func (p Pattern) Check() error {
	switch {
	case len(p.Body) == 0:
		return errors.New("the repeated body has no operation")
	case len(p.Tail) == 0:
		return errors.New("nothing to measure: no operation after 'measure'")
	}
	for _, s := range [][]Op{p.Setup, p.Body, p.Tail} {
		if len(s) > MaxPatternOps {
			return fmt.Errorf("a section of %d operations (at most %d)", len(s), MaxPatternOps)
		}
		if c := Cost(s); c > MaxPatternWork {
			return fmt.Errorf("a section whose work is %d operations (at most %d; a churn or fill of N counts N)", c, MaxPatternWork)
		}
	}
	return p.checkVary()
}

// MaxN is the largest size the pattern is measured at: a body repeated
// that often does at most MaxPatternWork operations' work (Cost), and no
// more than MaxMeasureN.
func (p Pattern) MaxN() int {
	return min(p.varyMaxN(), int(min(MaxMeasureN, MaxPatternWork/max(Cost(p.Body), 1))))
}

// PatternWorkload is the workload that measures p: its canonical text, which
// is how it travels to a plugin (MeasureRequest.workload).
func PatternWorkload(p Pattern) Workload { return Workload(FormatPattern(p)) }

// IsPattern reports whether w is a pattern workload rather than a named one.
func IsPattern(w Workload) bool { return strings.HasPrefix(string(w), patternPrefix) }

// PatternOf reads the pattern a pattern workload carries.
func PatternOf(w Workload) (Pattern, error) {
	if !IsPattern(w) {
		return Pattern{}, fmt.Errorf("%q is not a pattern workload", clip(string(w)))
	}
	return ParsePattern("pattern", strings.NewReader(string(w)))
}

// WorkloadLabel is a short name of w for reports: a named workload's name,
// or "pattern:SUBSYSTEM" with the body's first operation.
func WorkloadLabel(w Workload) string {
	if !IsPattern(w) {
		return string(w)
	}
	p, err := PatternOf(w)
	if err != nil || len(p.Body) == 0 {
		return "pattern"
	}
	return "pattern:" + p.Subsystem
}

// MeasurePattern measures p at size n on m, reps times: each repetition
// resets m with cfg, applies the setup, the body n times and then the tail,
// which alone is timed (and counted, when m counts, in the first
// repetition). An errno is a result like any other: a pattern found by a
// search may fail some of its operations; an error of the implementation
// itself fails the measurement.
func MeasurePattern(m Model, cfg Config, p Pattern, n, reps int) (Measurement, error) {
	if n < 1 || n > p.MaxN() {
		return Measurement{}, fmt.Errorf("pattern: size %d out of range 1..%d", n, p.MaxN())
	}
	if reps < 1 || reps > 1000 {
		return Measurement{}, fmt.Errorf("pattern: %d repetitions out of range 1..1000", reps)
	}
	c, counts := m.(Counting)
	res := Measurement{WallNs: make([]int64, reps)}
	for i := range reps {
		if err := m.Reset(cfg); err != nil {
			return Measurement{}, fmt.Errorf("reset: %w", err)
		}
		h := Handles{}
		if err := applyAll(m, h, p.Setup, false); err != nil {
			return Measurement{}, fmt.Errorf("pattern setup: %w", err)
		}
		for rep := 1; rep <= n; rep++ {
			if err := applyAll(m, h, p.BodyAt(rep), false); err != nil {
				return Measurement{}, fmt.Errorf("pattern body at n=%d: %w", n, err)
			}
		}
		var before map[string]int64
		if counts && i == 0 {
			before = c.Counters()
		}
		start := time.Now()
		if err := applyAll(m, h, p.Tail, false); err != nil {
			return Measurement{}, fmt.Errorf("pattern tail at n=%d: %w", n, err)
		}
		res.WallNs[i] = time.Since(start).Nanoseconds()
		if counts && i == 0 {
			res.Counters, res.Primary = map[string]int64{}, c.PrimaryCounter()
			for k, v := range c.Counters() {
				res.Counters[k] = v - before[k]
			}
		}
	}
	return res, nil
}
