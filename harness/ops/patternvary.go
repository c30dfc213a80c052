package ops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// VMAPatternPages is the window a pattern's repeated body may grow into
// with $i pages (Vary.Page) on the models: n VMAs need room for n of them.
// A script's window stays VMAWindowPages (the kernel side reserves no
// more), so the kernel measures such a pattern only while it stays there.
const VMAPatternPages = 1 << 15

// Vary is how an operation of a pattern's repeated body changes from one
// repetition to the next; the repetition i counts from 1 to n.
type Vary struct {
	// Page moves the operation's range (or page) of the window by Page*i
	// pages: written w:K*$i+S+P (w:$i+S+P when K is 1; w:K*$i+S for one
	// page), the range [S+K*i, S+K*i+P).
	Page int64
	// Task: repetition i is issued by task ti, written task=t$i; a pattern
	// with such an operation is measured at n <= MaxTask only.
	Task bool
}

// IsZero reports whether v changes nothing.
func (v Vary) IsZero() bool { return v == Vary{} }

// PatternOp is an operation of a pattern with its Vary (zero outside the
// repeated body).
type PatternOp struct {
	Op   Op
	Vary Vary
}

// Sections returns the setup, the body and the tail, each operation with
// its Vary.
func (p Pattern) Sections() [3][]PatternOp {
	var out [3][]PatternOp
	for s, sec := range [][]Op{p.Setup, p.Body, p.Tail} {
		out[s] = make([]PatternOp, len(sec))
		for i, op := range sec {
			out[s][i] = PatternOp{Op: op}
			if s == 1 {
				out[s][i].Vary = p.VaryOf(i)
			}
		}
	}
	return out
}

// NewPattern builds a pattern from its sections; a Vary outside the body is
// dropped.
func NewPattern(subsystem string, secs [3][]PatternOp) Pattern {
	p := Pattern{Subsystem: subsystem}
	dst := []*[]Op{&p.Setup, &p.Body, &p.Tail}
	varies := false
	for s, sec := range secs {
		for _, po := range sec {
			*dst[s] = append(*dst[s], po.Op)
			varies = varies || (s == 1 && !po.Vary.IsZero())
		}
	}
	if varies {
		p.Vary = make([]Vary, len(secs[1]))
		for i, po := range secs[1] {
			p.Vary[i] = po.Vary
		}
	}
	return p
}

// VaryOf is the Vary of body operation i (zero when it varies not).
func (p Pattern) VaryOf(i int) Vary {
	if i < len(p.Vary) {
		return p.Vary[i]
	}
	return Vary{}
}

// BodyAt returns the body as repetition i (1..n) issues it.
func (p Pattern) BodyAt(i int) []Op {
	if len(p.Vary) == 0 {
		return p.Body
	}
	out := make([]Op, len(p.Body))
	for j, op := range p.Body {
		v := p.VaryOf(j)
		if v.Task {
			op.Task = uint8(i)
		}
		op.VMA.Start += v.Page * int64(i)
		out[j] = op
	}
	return out
}

// varyMaxN is the largest n the varies of the body allow: n tasks at most
// MaxTask, n pages of a stride within VMAPatternPages.
func (p Pattern) varyMaxN() int {
	n := MaxMeasureN
	for i, op := range p.Body {
		v := p.VaryOf(i)
		if v.Task {
			n = min(n, MaxTask)
		}
		if v.Page > 0 {
			n = min(n, int((VMAPatternPages-op.VMA.Start-max(op.VMA.Pages, 1))/v.Page))
		}
	}
	return max(n, 0)
}

// checkVary holds the varies to what they may change.
func (p Pattern) checkVary() error {
	if len(p.Vary) != 0 && len(p.Vary) != len(p.Body) {
		return fmt.Errorf("%d varies for a body of %d operations", len(p.Vary), len(p.Body))
	}
	for i, op := range p.Body {
		v := p.VaryOf(i)
		s := Spec(op.Kind)
		switch {
		case v.Page < 0 || v.Page > VMAPatternPages:
			return fmt.Errorf("$i pages: a stride of %d (want 1..%d)", v.Page, VMAPatternPages)
		case v.Page > 0 && (s == nil || !hasRange(op.Kind) || op.VMA.Region() != RegionWindow):
			return fmt.Errorf("%s: $i pages only in a range of the window (w:K*$i+START+PAGES)", op.Kind)
		case v.Task && (s == nil || !s.Task):
			return fmt.Errorf("%s: no task= to vary", op.Kind)
		}
	}
	if p.varyMaxN() < 3 {
		return fmt.Errorf("the $i of the body leave fewer than 3 sizes to measure at")
	}
	return nil
}

// hasRange reports whether a kind takes a range or page of the VMA regions
// as its first argument.
func hasRange(k Kind) bool {
	s := Spec(k)
	if s == nil || len(s.Args) == 0 {
		return false
	}
	_, ok := s.Args[0].field.(rangeField)
	return ok
}

// HasRange reports whether an operation of kind k names pages of the VMA
// regions (what a Vary.Page moves).
func HasRange(k Kind) bool { return hasRange(k) }

var (
	varyPageRe = regexp.MustCompile(`^([wh]):(?:(\d+)\*)?\$i((?:\+\d+)*)$`)
	varyTaskRe = regexp.MustCompile(`^task=t\$i$`)
)

// parseVary reads the $i of a body line: the line with each $i token put
// back to what the operation parser takes (the range at S, task t1), and
// the Vary.
func parseVary(line string) (string, Vary, error) {
	var v Vary
	if !strings.Contains(line, "$") {
		return line, v, nil
	}
	words := strings.Fields(line)
	for i, w := range words {
		if !strings.Contains(w, "$") {
			continue
		}
		if varyTaskRe.MatchString(w) {
			v.Task, words[i] = true, "task=t1"
			continue
		}
		m := varyPageRe.FindStringSubmatch(w)
		if m == nil || v.Page != 0 {
			return "", v, fmt.Errorf("%q: $i is written w:K*$i+START+PAGES (w:K*$i+START for one page) or task=t$i", clip(w))
		}
		if m[1] == "h" {
			return "", v, fmt.Errorf("%q: $i pages only in the window (w:), not the heap area", clip(w))
		}
		v.Page = 1
		if m[2] != "" {
			k, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil || k < 1 || k > VMAPatternPages {
				return "", v, fmt.Errorf("%q: the stride of $i must be 1..%d", clip(w), VMAPatternPages)
			}
			v.Page = k
		}
		rest := strings.TrimPrefix(m[3], "+")
		if rest == "" {
			rest = "0"
		}
		words[i] = m[1] + ":" + rest
	}
	if strings.Contains(strings.Join(words, " "), "$") {
		return "", v, fmt.Errorf("$i is allowed once per argument, in a range and in task=")
	}
	return strings.Join(words, " "), v, nil
}

// FormatVaried writes a body operation with its Vary ($i).
func FormatVaried(op Op, v Vary) string {
	text := FormatOp(op)
	if v.IsZero() {
		return text
	}
	words := strings.Fields(text)
	task, page := v.Task, v.Page > 0
	for i, w := range words {
		switch {
		case task && strings.HasPrefix(w, "task=t"):
			words[i], task = "task=t$i", false
		case page && strings.HasPrefix(w, "w:"):
			page = false
			k := "$i"
			if v.Page != 1 {
				k = strconv.FormatInt(v.Page, 10) + "*$i"
			}
			words[i] = "w:" + k + "+" + strings.TrimPrefix(w, "w:")
		}
	}
	if task {
		words = append(words, "task=t$i")
	}
	return strings.Join(words, " ")
}
