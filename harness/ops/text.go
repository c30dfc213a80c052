package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Step is one line of a script: an operation and, optionally, the result it
// must have on every implementation.
type Step struct {
	Op   Op
	Want *Result
}

// Script is a sequence of operations of one subsystem. Its canonical text
// form (Format) is what the corpus, reports and replay use; Parse reads it
// back and Parse(Format(s)) == s.
type Script struct {
	Subsystem string
	Steps     []Step
}

// NewScript makes a script of operations without expectations.
func NewScript(subsystem string, script []Op) *Script {
	s := &Script{Subsystem: subsystem, Steps: make([]Step, len(script))}
	for i, op := range script {
		s.Steps[i] = Step{Op: op}
	}
	return s
}

// Ops returns the operations of the script without expectations.
func (s *Script) Ops() []Op {
	out := make([]Op, len(s.Steps))
	for i, st := range s.Steps {
		out[i] = st.Op
	}
	return out
}

// FormatOp writes the canonical text of one operation:
//
//	[xN = ] name [type] positional... named... [as=U] [task=tN]
func FormatOp(op Op) string {
	s := Spec(op.Kind)
	if s == nil {
		return fmt.Sprintf("kind%d", op.Kind)
	}
	var b strings.Builder
	if op.Bind > 0 && s.Binds != 0 {
		fmt.Fprintf(&b, "%c%d = ", s.Binds, op.Bind)
	}
	b.WriteString(s.Name)
	if s.typed() {
		b.WriteByte(' ')
		b.WriteString(op.Type.String())
	}
	for a := range s.presentArgs(&op) {
		switch {
		case a.flag != nil:
			if a.flag.get(&op) {
				b.WriteString(" " + a.Name)
			}
		case a.Name == "":
			b.WriteString(" " + a.field.format(&op))
		case a.optional && a.field.zero(&op):
		default:
			b.WriteString(" " + a.Name + "=" + a.field.format(&op))
		}
	}
	if op.As != 0 {
		fmt.Fprintf(&b, " as=%d", op.As)
	}
	if op.Task != 0 {
		fmt.Fprintf(&b, " task=t%d", op.Task)
	}
	return b.String()
}

// ParseOp reads the canonical text of one operation.
func ParseOp(text string) (Op, error) {
	var op Op
	f := strings.Fields(text)
	var bindClass Class
	if len(f) >= 2 && f[1] == "=" {
		if f[0] == "" {
			return op, fmt.Errorf("empty handle before '='")
		}
		bindClass = Class(f[0][0])
		n, err := parseHandleOf(bindClass, f[0])
		if err != nil {
			return op, err
		}
		op.Bind = n
		f = f[2:]
	}
	if len(f) == 0 {
		return op, fmt.Errorf("want an operation, got %q", clip(text))
	}
	s := SpecByName(f[0])
	if s == nil {
		return op, fmt.Errorf("unknown operation %q", clip(f[0]))
	}
	op.Kind = s.Kind
	if bindClass != 0 && bindClass != s.Binds {
		if s.Binds == 0 {
			return op, fmt.Errorf("%s binds no handle", s.Name)
		}
		return op, fmt.Errorf("%s binds a handle %cN, not %cN", s.Name, s.Binds, bindClass)
	}
	f = f[1:]
	if s.typed() {
		if len(f) == 0 {
			return op, fmt.Errorf("%s needs a type (%s)", s.Name, typeNames(s.Types))
		}
		t, err := ParseIPCType(f[0])
		if err != nil || !slices.Contains(s.Types, t) {
			return op, fmt.Errorf("%s takes type %s, not %q", s.Name, typeNames(s.Types), clip(f[0]))
		}
		op.Type = t
		f = f[1:]
	}
	if err := parseArgs(s, &op, f); err != nil {
		return op, err
	}
	return op, Validate(op)
}

func typeNames(ts []IPCType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, " or ")
}

// parseArgs reads the positional arguments in order, then the named ones and
// the flags in any order, each at most once.
func parseArgs(s *KindSpec, op *Op, toks []string) error {
	for i := range s.Args {
		a := &s.Args[i]
		if a.Name != "" || a.flag != nil || !a.present(op) {
			continue
		}
		if len(toks) == 0 {
			return fmt.Errorf("%s needs %s", s.Name, s.usage())
		}
		if err := a.field.parse(op, toks[0]); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		toks = toks[1:]
	}
	seen := map[string]bool{}
	for _, t := range toks {
		name, val, hasVal := strings.Cut(t, "=")
		if seen[name] {
			return fmt.Errorf("%s: %s given twice", s.Name, clip(name))
		}
		seen[name] = true
		if err := parseNamed(s, op, name, val, hasVal); err != nil {
			return err
		}
	}
	for i := range s.Args {
		a := &s.Args[i]
		if a.Name != "" && a.flag == nil && !a.optional && a.present(op) && !seen[a.Name] {
			return fmt.Errorf("%s needs %s=", s.Name, a.Name)
		}
	}
	return nil
}

func parseNamed(s *KindSpec, op *Op, name, val string, hasVal bool) error {
	switch {
	case name == "as" && hasVal && s.As:
		u, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return fmt.Errorf("as %q: want a uid 0..%d", clip(val), uint32(1<<32-1))
		}
		op.As = uint32(u)
		return nil
	case name == "task" && hasVal && s.Task:
		t, err := parseTask(val)
		op.Task = t
		return err
	}
	for i := range s.Args {
		a := &s.Args[i]
		if a.Name != name || !a.present(op) {
			continue
		}
		if a.flag != nil && !hasVal {
			a.flag.set(op, true)
			return nil
		}
		if a.flag == nil && hasVal {
			if err := a.field.parse(op, val); err != nil {
				return fmt.Errorf("%s %s: %w", s.Name, name, err)
			}
			return nil
		}
	}
	arg := name
	if hasVal {
		arg += "=" + val
	}
	return fmt.Errorf("unexpected argument %q for %s (want %s)", clip(arg), s.Name, s.usage())
}

// usage describes a kind's arguments, for error messages.
func (s *KindSpec) usage() string {
	var parts []string
	for i := range s.Args {
		a := &s.Args[i]
		switch {
		case a.flag != nil:
			parts = append(parts, "["+a.Name+"]")
		case a.ref != nil:
			parts = append(parts, "hN|id=N")
		case a.handle != 0 && a.Name == "":
			parts = append(parts, string(a.handle)+"N")
		case a.Name == "":
			parts = append(parts, "<value>")
		case a.optional:
			parts = append(parts, "["+a.Name+"=...]")
		default:
			parts = append(parts, a.Name+"=...")
		}
	}
	if s.As {
		parts = append(parts, "[as=U]")
	}
	if s.Task {
		parts = append(parts, "[task=tN]")
	}
	return strings.Join(parts, " ")
}

// Validate checks what the text of an operation cannot say by itself: a
// kind's own rules (a main task that may not block, a size out of range).
func Validate(op Op) error {
	s := Spec(op.Kind)
	if s == nil {
		return fmt.Errorf("unknown operation kind %d", op.Kind)
	}
	if s.typed() && !slices.Contains(s.Types, op.Type) {
		return fmt.Errorf("%s takes type %s, not %s", s.Name, typeNames(s.Types), op.Type)
	}
	if op.Task > MaxTask || (op.Task != 0 && !s.Task) {
		return fmt.Errorf("%s: task=t%d is not allowed", s.Name, op.Task)
	}
	if op.As != 0 && !s.As {
		return fmt.Errorf("%s: as= is not allowed", s.Name)
	}
	if s.Check != nil {
		if err := s.Check(op); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

func parseTask(s string) (uint8, error) {
	v, ok := strings.CutPrefix(s, "t")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 || n > MaxTask {
		return 0, fmt.Errorf("task %q: want t0..t%d", clip(s), MaxTask)
	}
	return uint8(n), nil
}

// FormatResult writes the canonical text of the result of op, followed by
// the completions of sleeping tasks it caused (" ; t1 ok").
func FormatResult(op Op, r Result) string {
	return formatResult(&op, &r) + formatCompletions(r.Done)
}

func formatResult(op *Op, r *Result) string {
	switch {
	case r.Err != OK:
		return r.Err.String()
	case r.Blocked:
		return "blocked"
	}
	s := Spec(op.Kind)
	if s == nil {
		return "ok"
	}
	return s.Result.format(op, r)
}

// ParseResult reads the canonical text of a result of op, with the
// completions that may follow it.
func ParseResult(op Op, text string) (Result, error) {
	var r Result
	parts := strings.Split(text, " ; ")
	head := strings.TrimSpace(parts[0])
	s := Spec(op.Kind)
	switch {
	case head == "":
		return r, fmt.Errorf("empty result")
	case s == nil:
		return r, fmt.Errorf("unknown operation kind %d", op.Kind)
	case head == "blocked":
		r.Blocked = true
	case strings.HasPrefix(head, "E") || strings.HasPrefix(head, "errno"):
		e, err := ParseErrno(head)
		if err != nil {
			return r, err
		}
		if e == OK {
			return r, fmt.Errorf("error result %q is not an error", clip(head))
		}
		r.Err = e
	default:
		if err := s.Result.parse(&op, &r, head); err != nil {
			return r, err
		}
	}
	if len(parts) > 1 {
		done, err := parseCompletions(parts[1:])
		if err != nil {
			return r, err
		}
		r.Done = done
	}
	return r, nil
}

// FormatStep writes one script line.
func FormatStep(s Step) string {
	line := FormatOp(s.Op)
	if s.Want != nil {
		line += " -> " + FormatResult(s.Op, *s.Want)
	}
	return line
}

// Format writes the canonical text of a whole script.
func Format(s *Script) string {
	var b strings.Builder
	fmt.Fprintf(&b, "subsystem %s\n", s.Subsystem)
	for _, st := range s.Steps {
		b.WriteString(FormatStep(st))
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseError locates a problem in script text.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	name := e.File
	if name == "" {
		name = "<script>"
	}
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", name, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", name, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// MaxLine is the longest script line Parse reads.
const MaxLine = 1 << 16

// Parse reads a script, strictly: a "subsystem" line naming a known
// subsystem comes first, every operation belongs to it, every handle is
// bound once before it is used, every expectation is complete, and there is
// at least one operation. Blank lines and lines starting with '#' are
// ignored. name is used in error messages only; they echo at most a short
// excerpt of the input.
func Parse(name string, r io.Reader) (*Script, error) {
	p := parser{name: name, bound: map[Class]map[int]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine)
	for p.line = 1; sc.Scan(); p.line++ {
		if err := p.step(strings.TrimSpace(sc.Text())); err != nil {
			return nil, &ParseError{name, p.line, err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{name, p.line, fmt.Errorf("line longer than %d bytes", MaxLine)}
		}
		return nil, &ParseError{name, 0, fmt.Errorf("reading: %w", err)}
	}
	switch {
	case p.sc.Subsystem == "":
		return nil, &ParseError{name, 0, fmt.Errorf("no 'subsystem' line (want one of %s)", strings.Join(Subsystems(), ", "))}
	case len(p.sc.Steps) == 0:
		return nil, &ParseError{name, 0, fmt.Errorf("no operations")}
	}
	return &p.sc, nil
}

// ParseString parses a script held in a string.
func ParseString(text string) (*Script, error) {
	return Parse("", strings.NewReader(text))
}

type parser struct {
	name  string
	line  int
	sc    Script
	sub   SubsystemSpec
	bound map[Class]map[int]int // handle -> line that bound it
}

func (p *parser) step(line string) error {
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	if rest, ok := strings.CutPrefix(line, "subsystem "); ok {
		return p.subsystem(strings.TrimSpace(rest))
	}
	if p.sc.Subsystem == "" {
		return fmt.Errorf("the first line must be 'subsystem NAME' (one of %s)", strings.Join(Subsystems(), ", "))
	}
	st, err := ParseStep(line)
	if err != nil {
		return err
	}
	if !p.sub.Allows(st.Op.Kind) {
		return fmt.Errorf("%s is not an operation of a %s script", st.Op.Kind, p.sc.Subsystem)
	}
	if err := p.handles(st.Op); err != nil {
		return err
	}
	p.sc.Steps = append(p.sc.Steps, st)
	return nil
}

func (p *parser) subsystem(name string) error {
	if p.sc.Subsystem != "" || len(p.sc.Steps) > 0 {
		return fmt.Errorf("'subsystem' must come once, before the first operation")
	}
	sub, ok := Subsystem(name)
	if !ok {
		return fmt.Errorf("unknown subsystem %q (want one of %s)", clip(name), strings.Join(Subsystems(), ", "))
	}
	p.sc.Subsystem, p.sub = name, sub
	return nil
}

// handles checks that op uses only handles bound on earlier lines and binds
// a handle not bound before.
func (p *parser) handles(op Op) error {
	var err error
	UsedHandles(op, func(c Class, n int) {
		if _, ok := p.bound[c][n]; !ok && err == nil {
			err = fmt.Errorf("handle %c%d is used before any line binds it", c, n)
		}
	})
	if err != nil {
		return err
	}
	s := Spec(op.Kind)
	if op.Bind > 0 {
		if p.bound[s.Binds] == nil {
			p.bound[s.Binds] = map[int]int{}
		}
		if prev, dup := p.bound[s.Binds][op.Bind]; dup {
			return fmt.Errorf("handle %c%d is already bound on line %d", s.Binds, op.Bind, prev)
		}
		p.bound[s.Binds][op.Bind] = p.line
	}
	return nil
}

// UsedHandles calls f for every handle op refers to (not the one it binds).
func UsedHandles(op Op, f func(Class, int)) {
	eachUsedHandle(&op, func(c Class, h *int, _ *Ref) { f(c, *h) })
}

// eachUsedHandle calls f for every handle op refers to (not the one it
// binds) with its class and where op holds its number; for an object
// handle, ref is the reference that holds it (nil for the other classes).
func eachUsedHandle(op *Op, f func(c Class, h *int, ref *Ref)) {
	s := Spec(op.Kind)
	if s == nil {
		return
	}
	for a := range s.presentArgs(op) {
		switch {
		case a.ref != nil:
			if r := a.ref(op); r.Handle > 0 {
				f(ClassObject, &r.Handle, r)
			}
		case a.handle != 0:
			if h := a.field.(handleHolder).handlePtr(op); *h > 0 {
				f(a.handle, h, nil)
			}
		}
	}
}

// ParseStep reads one script line: an operation and an optional "-> result".
func ParseStep(line string) (Step, error) {
	opText, resText, hasRes := strings.Cut(line, "->")
	op, err := ParseOp(strings.TrimSpace(opText))
	if err != nil {
		return Step{}, err
	}
	st := Step{Op: op}
	if hasRes {
		r, err := ParseResult(op, strings.TrimSpace(resText))
		if err != nil {
			return Step{}, fmt.Errorf("expected result: %w", err)
		}
		st.Want = &r
	}
	return st, nil
}
