package corpus

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ParseSides reads both sides' results back from the side-by-side table
// in the header of a finding's text (SideBySide with the prefix "# "),
// given the script the file holds. ok is false when the file has no
// table (a seed). A row that does not fit the script is an error naming
// its step.
func ParseSides(text string, sc *ops.Script) (a, b Side, ok bool, err error) {
	lines := strings.Split(text, "\n")
	at := -1
	for i, l := range lines {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if tableLine.MatchString(l) {
			at = i
			break
		}
	}
	if at < 0 {
		return a, b, false, nil
	}
	head := lines[at]
	m := tableLine.FindStringSubmatch(head)
	a.Name, b.Name = m[1], m[2]
	// A's column starts where the header's does; results hold single
	// spaces only, and the columns are two or more apart (the header's B
	// may stand further right than the rows' when A's name is the widest).
	colA := strings.Index(head, "A: ")
	steps := sc.Ops()
	for i, op := range steps {
		if at+1+i >= len(lines) {
			return a, b, false, fmt.Errorf("the side-by-side table stops at step %d of %d", i, len(steps))
		}
		row := lines[at+1+i]
		opText := ops.FormatOp(op)
		body, found := strings.CutSuffix(row, "  "+opText)
		if !found || len(body) < colA {
			return a, b, false, fmt.Errorf("the side-by-side table's step %d does not show %q", i+1, opText)
		}
		ra, rb, _ := strings.Cut(strings.TrimSpace(body[colA:]), "  ")
		ra, rb = strings.TrimSpace(ra), strings.TrimSpace(rb)
		for _, side := range []struct {
			text string
			s    *Side
		}{{ra, &a}, {rb, &b}} {
			if side.text == "-" {
				continue
			}
			r, err := ops.ParseResult(op, side.text)
			if err != nil {
				return a, b, false, fmt.Errorf("the side-by-side table's step %d, side %s: %w", i+1, side.s.Name, err)
			}
			side.s.Results = append(side.s.Results, r)
		}
	}
	return a, b, true, nil
}

// FillFromTable gives a finding of format 1 (whose body states no result)
// both sides' results from its side-by-side table, when it has one; text
// is the file's text. Findings of format 2 state them already.
func (f *Finding) FillFromTable(text string) error {
	if f.Format != 1 || len(f.A.Results) > 0 || len(f.B.Results) > 0 {
		return nil
	}
	a, b, ok, err := ParseSides(text, f.Script)
	if err != nil || !ok {
		return err
	}
	f.A.Results, f.B.Results = a.Results, b.Results
	return nil
}
