package ops

import (
	"fmt"
	"strings"
)

// ResultForm writes and reads the result of a successful operation; the
// errno of a failed one, "blocked", and the completions of sleeping tasks
// that follow a result (" ; t1 ok") are common to every kind.
type ResultForm interface {
	format(op *Op, r *Result) string
	parse(op *Op, r *Result, text string) error
}

// okResult is a result that says nothing but success.
type okResult struct{}

func (okResult) format(*Op, *Result) string { return "ok" }

func (okResult) parse(_ *Op, _ *Result, text string) error {
	if text != "ok" {
		return fmt.Errorf("result %q: want ok or an error name", clip(text))
	}
	return nil
}

// valueOf is one named value of a result ("id=5").
type valueOf struct {
	name string
	f    field[Result]
}

// fieldsResult is a result written as name=value pairs, every one of them,
// in a fixed order: a partial expectation is an error, never a guess.
type fieldsResult []valueOf

func (fs fieldsResult) format(_ *Op, r *Result) string {
	parts := make([]string, len(fs))
	for i, v := range fs {
		if v.name == "" {
			parts[i] = v.f.format(r)
			continue
		}
		parts[i] = v.name + "=" + v.f.format(r)
	}
	return strings.Join(parts, " ")
}

func (fs fieldsResult) parse(_ *Op, r *Result, text string) error {
	toks := resultTokens(text)
	if len(toks) != len(fs) {
		return fmt.Errorf("result %q: want %s", clip(text), fs.shape())
	}
	for i, v := range fs {
		val := toks[i]
		if v.name != "" {
			var ok bool
			if val, ok = strings.CutPrefix(val, v.name+"="); !ok {
				return fmt.Errorf("result %q: want %s", clip(text), fs.shape())
			}
		}
		if err := v.f.parse(r, val); err != nil {
			return fmt.Errorf("result field %s: %w", v.name, err)
		}
	}
	return nil
}

// shape describes the expected text, for error messages.
func (fs fieldsResult) shape() string {
	parts := make([]string, len(fs))
	for i, v := range fs {
		if v.name == "" {
			parts[i] = "{row}"
			continue
		}
		parts[i] = v.name + "=N"
	}
	return strings.Join(parts, " ")
}

// resultTokens splits a result's text at spaces, keeping "{...}" groups (a
// row) whole.
func resultTokens(text string) []string {
	var out []string
	f := strings.Fields(text)
	for i := 0; i < len(f); i++ {
		if !strings.HasPrefix(f[i], "{") || strings.HasSuffix(f[i], "}") {
			out = append(out, f[i])
			continue
		}
		j := i
		for j < len(f)-1 && !strings.HasSuffix(f[j], "}") {
			j++
		}
		out = append(out, strings.Join(f[i:j+1], " "))
		i = j
	}
	return out
}

// byOp chooses the form of a result from the operation (its command).
type byOp func(op *Op) ResultForm

func (b byOp) format(op *Op, r *Result) string { return b(op).format(op, r) }

func (b byOp) parse(op *Op, r *Result, text string) error { return b(op).parse(op, r, text) }

// rowField is a /proc/sysvipc row of type t written "{...}", the row of
// Result.Row.
type rowField struct{ t IPCType }

func (f rowField) format(r *Result) string { return "{" + FormatRow(f.t, r.Row) + "}" }

func (f rowField) parse(r *Result, text string) error {
	inner, ok := strings.CutPrefix(text, "{")
	if inner, ok2 := strings.CutSuffix(inner, "}"); ok && ok2 {
		row, err := ParseRow(f.t, inner)
		r.Row = row
		return err
	}
	return fmt.Errorf("row %q: want {%s}", clip(text), strings.Join(RowColumns(f.t), " "))
}

func (f rowField) zero(r *Result) bool { return r.Row == Row{} }

func (f rowField) syntax() string { return "{ROW}" }

func (f rowField) plainer(*Result) []func(*Result) { return nil }

// ret is the return value of a *ctl call that returns one (Result.ID).
var ret = valueOf{"ret", dec(func(r *Result) *int64 { return &r.ID }, -1<<63, 1<<63-1, 0)}

// formatCompletions writes the completions of a result: " ; t1 ok ; t2 type=1 text=ab".
func formatCompletions(done []Completion) string {
	var b strings.Builder
	for _, c := range done {
		fmt.Fprintf(&b, " ; t%d ", c.Task)
		switch {
		case c.Err != OK:
			b.WriteString(c.Err.String())
		case c.Recv:
			b.WriteString(formatMessage(c.Msg))
		default:
			b.WriteString("ok")
		}
	}
	return b.String()
}

func parseCompletions(parts []string) ([]Completion, error) {
	var out []Completion
	for _, p := range parts {
		p = strings.TrimSpace(p)
		ts, rest, _ := strings.Cut(p, " ")
		task, err := parseTask(ts)
		if err != nil {
			return nil, fmt.Errorf("completion %q: %v", clip(p), err)
		}
		c := Completion{Task: task}
		switch {
		case rest == "ok":
		case strings.HasPrefix(rest, "type="):
			c.Recv = true
			if c.Msg, err = parseMessage(rest); err != nil {
				return nil, err
			}
		default:
			if c.Err, err = ParseErrno(rest); err != nil || c.Err == OK {
				return nil, fmt.Errorf("completion %q: want ok, type=N text=... or an error name", clip(p))
			}
		}
		if len(out) > 0 && out[len(out)-1].Task >= task {
			return nil, fmt.Errorf("completion %q: completions come in task order, each task once", clip(p))
		}
		out = append(out, c)
	}
	return out, nil
}
