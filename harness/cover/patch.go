package cover

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ParsePatch reads a unified diff and returns the lines it adds or changes,
// as lines of the new files: each added line, and for lines only removed
// the line that now stands where they were (the code that runs instead).
// A/ and b/ prefixes are taken off the file names; /dev/null (a deleted
// file) has no lines.
func ParsePatch(r io.Reader) ([]FileLine, error) {
	var out []FileLine
	seen := map[FileLine]bool{}
	add := func(fl FileLine) {
		if !seen[fl] {
			seen[fl] = true
			out = append(out, fl)
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	file := ""
	next := 0           // the new file's line number of the next line
	inHunk := false     // within a hunk's lines
	removed := false    // lines were removed since the last line kept or added
	left, right := 0, 0 // lines of the hunk still to read, old and new
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case inHunk && (left > 0 || right > 0) && (l == "" || l[0] == ' ' || l[0] == '+' || l[0] == '-' || l[0] == '\\'):
			switch {
			case l == "" || l[0] == ' ':
				if removed && file != "" {
					add(FileLine{file, next})
				}
				removed = false
				next++
				left--
				right--
			case l[0] == '+':
				if file != "" {
					add(FileLine{file, next})
				}
				removed = false
				next++
				right--
			case l[0] == '-':
				removed = true
				left--
			}
		case strings.HasPrefix(l, "+++ "):
			name := strings.TrimPrefix(l, "+++ ")
			if i := strings.IndexByte(name, '\t'); i >= 0 {
				name = name[:i]
			}
			name = strings.TrimSpace(name)
			switch {
			case name == "/dev/null":
				file = ""
			case strings.HasPrefix(name, "b/"):
				file = name[2:]
			default:
				file = name
			}
			inHunk = false
		case strings.HasPrefix(l, "@@ "):
			old, new, err := hunkHeader(l)
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", n, err)
			}
			next, left, right = new[0], old[1], new[1]
			inHunk, removed = true, false
		default:
			if removed && file != "" {
				add(FileLine{file, next})
			}
			removed, inHunk = false, false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the patch: %w", err)
	}
	if removed && file != "" {
		add(FileLine{file, next})
	}
	return out, nil
}

// hunkHeader reads "@@ -a,b +c,d @@": (a, b) and (c, d); a count left out
// is 1.
func hunkHeader(l string) (old, new [2]int, err error) {
	f := strings.Fields(l)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return old, new, fmt.Errorf("bad hunk header %q", l)
	}
	if old, err = rangeOf(f[1][1:]); err == nil {
		new, err = rangeOf(f[2][1:])
	}
	if err != nil {
		return old, new, fmt.Errorf("bad hunk header %q: %w", l, err)
	}
	return old, new, nil
}

func rangeOf(s string) ([2]int, error) {
	a, b, ok := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return [2]int{}, err
	}
	count := 1
	if ok {
		if count, err = strconv.Atoi(b); err != nil {
			return [2]int{}, err
		}
	}
	return [2]int{start, count}, nil
}

// PatchLine is one line a patch adds or changes, and what the run did
// with it.
type PatchLine struct {
	FileLine
	// Code says whether the line has code in the covered functions
	// (a comment, a declaration or a brace has none).
	Code bool
	// Ran says whether that code ran.
	Ran bool
}

// PatchReport is a run's coverage of a patch's lines.
type PatchReport struct {
	Lines []PatchLine
	// Reached counts the lines with code that ran, out of those with code.
	Reached Stat
	// Outside counts the patch's lines in files not covered.
	Outside int
}

// Patch maps the lines a patch adds or changes (ParsePatch) onto r.
func (r *Report) Patch(lines []FileLine) PatchReport {
	covered := map[string]bool{}
	for _, u := range r.Image.Units {
		covered[u] = true
	}
	var p PatchReport
	for _, fl := range lines {
		ran, code := r.Ran(fl)
		if !covered[fl.File] && !code {
			p.Outside++
			continue
		}
		p.Lines = append(p.Lines, PatchLine{FileLine: fl, Code: code, Ran: ran})
		if code {
			p.Reached.add(ran)
		}
	}
	sort.SliceStable(p.Lines, func(i, j int) bool {
		a, b := p.Lines[i], p.Lines[j]
		return a.File < b.File || a.File == b.File && a.Line < b.Line
	})
	return p
}

// Summary is the one-line figure of the patch's lines.
func (p PatchReport) Summary() string {
	s := fmt.Sprintf("patch lines reached %s", p.Reached)
	if p.Outside > 0 {
		s += fmt.Sprintf(", %d lines outside the covered files", p.Outside)
	}
	return s
}

// WriteText writes the summary and the patch's lines with code that never
// ran.
func (p PatchReport) WriteText(w io.Writer) error {
	pw := &errWriter{w: w}
	pw.printf("# %s\n", p.Summary())
	for _, l := range p.Lines {
		if l.Code && !l.Ran {
			pw.printf("never reached %s:%d\n", l.File, l.Line)
		}
	}
	return pw.err
}
