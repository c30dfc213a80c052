package ops

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Step is one line of a script: an operation and, optionally, the result it
// must have on every implementation.
type Step struct {
	Op   Op
	Want *Result
}

// Script is a sequence of operations on one subsystem. Its canonical text form
// (Format) is what the corpus, reports and replay use; Parse reads it back and
// Parse(Format(s)) == s.
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

// FormatOp writes the canonical text of one operation.
func FormatOp(op Op) string {
	var b strings.Builder
	if op.Kind == KindGet && op.Bind > 0 {
		fmt.Fprintf(&b, "h%d = ", op.Bind)
	}
	if op.Kind == KindShmat && op.Att > 0 {
		fmt.Fprintf(&b, "a%d = ", op.Att)
	}
	b.WriteString(op.Kind.String())
	b.WriteByte(' ')
	b.WriteString(op.Type.String())
	switch op.Kind {
	case KindGet:
		fmt.Fprintf(&b, " key=%s", formatKey(op.Key))
		if op.Creat {
			b.WriteString(" creat")
		}
		if op.Excl {
			b.WriteString(" excl")
		}
		fmt.Fprintf(&b, " mode=%04o", op.Mode)
		if op.Size != 0 {
			fmt.Fprintf(&b, " size=%d", op.Size)
		}
	case KindRmid, KindStat:
		b.WriteByte(' ')
		b.WriteString(formatRef(op.Obj))
	case KindNextID, KindLimit, KindRmidForced:
		fmt.Fprintf(&b, " %d", op.Value)
	case KindList:
		if op.Rows {
			b.WriteString(" rows")
		}
	case KindShmat:
		b.WriteByte(' ')
		b.WriteString(formatRef(op.Obj))
		for _, f := range shmatFlagNames {
			if op.Flags&f.bit != 0 {
				b.WriteString(" " + f.name)
			}
		}
	case KindShmdt:
		fmt.Fprintf(&b, " a%d", op.Att)
	case KindMsgsnd, KindMsgrcv, KindMsgctl:
		formatMsgOp(&b, op)
	case KindShmctl:
		fmt.Fprintf(&b, " %s %s", formatRef(op.Obj), op.Cmd)
		if op.Cmd == ShmIPCSet {
			fmt.Fprintf(&b, " owner=%d mode=%04o", op.Value, op.Mode)
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

func formatKey(k int32) string { return fmt.Sprintf("0x%x", uint32(k)) }

func formatRef(r Ref) string {
	if r.Handle > 0 {
		return fmt.Sprintf("h%d", r.Handle)
	}
	return fmt.Sprintf("id=%d", r.ID)
}

// FormatResult writes the canonical text of the result of op, followed by
// the completions of sleeping tasks it caused (" ; t1 ok").
func FormatResult(op Op, r Result) string {
	return formatResult(op, r) + formatDone(r.Done)
}

func formatResult(op Op, r Result) string {
	if r.Err != OK {
		return r.Err.String()
	}
	switch k := op.Kind; k {
	case KindMsgsnd, KindMsgrcv, KindMsgctl:
		return formatMsgResult(op, r)
	case KindGet:
		return fmt.Sprintf("id=%d", r.ID)
	case KindStat:
		return fmt.Sprintf("key=%s mode=%04o owner=%d size=%d", formatKey(r.Obj.Key), r.Obj.Mode, r.Obj.Owner, r.Obj.Size)
	case KindShmctl:
		return formatShmctlResult(r)
	case KindList:
		if op.Rows {
			parts := make([]string, len(r.Rows))
			for i, row := range r.Rows {
				parts[i] = FormatRow(op.Type, row)
			}
			return "[" + strings.Join(parts, " | ") + "]"
		}
		parts := make([]string, len(r.List))
		for i, e := range r.List {
			parts[i] = fmt.Sprintf("%d:%s", e.ID, formatKey(e.Key))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "ok"
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
	if s.Subsystem != "" {
		fmt.Fprintf(&b, "subsystem %s\n", s.Subsystem)
	}
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
	return fmt.Sprintf("%s:%d: %v", name, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads a script. name is used in error messages only. Blank lines and
// lines starting with '#' are ignored.
func Parse(name string, r io.Reader) (*Script, error) {
	s := &Script{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	bound, boundAtt := map[int]int{}, map[int]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "subsystem "); ok {
			if s.Subsystem != "" || len(s.Steps) > 0 {
				return nil, &ParseError{name, n, fmt.Errorf("'subsystem' must come once, before the first operation")}
			}
			s.Subsystem = strings.TrimSpace(rest)
			continue
		}
		st, err := ParseStep(line)
		if err != nil {
			return nil, &ParseError{name, n, err}
		}
		if st.Op.Bind > 0 {
			if prev, dup := bound[st.Op.Bind]; dup {
				return nil, &ParseError{name, n, fmt.Errorf("handle h%d is already bound on line %d", st.Op.Bind, prev)}
			}
			bound[st.Op.Bind] = n
		}
		if st.Op.Kind == KindShmat && st.Op.Att > 0 {
			if prev, dup := boundAtt[st.Op.Att]; dup {
				return nil, &ParseError{name, n, fmt.Errorf("attachment a%d is already bound on line %d", st.Op.Att, prev)}
			}
			boundAtt[st.Op.Att] = n
		}
		s.Steps = append(s.Steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return s, nil
}

// ParseString parses a script held in a string.
func ParseString(text string) (*Script, error) {
	return Parse("", strings.NewReader(text))
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
			return Step{}, err
		}
		st.Want = &r
	}
	return st, nil
}

// ParseOp reads the canonical text of one operation.
func ParseOp(text string) (Op, error) {
	var op Op
	f := strings.Fields(text)
	attBound := false
	if len(f) >= 2 && f[1] == "=" {
		if strings.HasPrefix(f[0], "a") {
			a, err := parseAtt(f[0])
			if err != nil {
				return op, err
			}
			op.Att, attBound = a, true
		} else {
			h, err := parseHandle(f[0])
			if err != nil {
				return op, err
			}
			op.Bind = h
		}
		f = f[2:]
	}
	if len(f) < 2 {
		return op, fmt.Errorf("want '<op> <type> ...', got %q", text)
	}
	var kindOK bool
	for k, n := range kindNames {
		if n == f[0] {
			op.Kind, kindOK = k, true
		}
	}
	if !kindOK {
		return op, fmt.Errorf("unknown operation %q", f[0])
	}
	if op.Bind > 0 && op.Kind != KindGet {
		return op, fmt.Errorf("only 'get' binds a handle")
	}
	if attBound && op.Kind != KindShmat {
		return op, fmt.Errorf("only 'shmat' binds an attachment")
	}
	t, err := ParseIPCType(f[1])
	if err != nil {
		return op, err
	}
	op.Type = t
	args := f[2:]
	switch op.Kind {
	case KindRmid, KindStat:
		if len(args) == 0 {
			return op, fmt.Errorf("%s needs an object (hN or id=N)", op.Kind)
		}
		if op.Obj, err = parseRef(args[0]); err != nil {
			return op, err
		}
		args = args[1:]
	case KindMsgsnd, KindMsgrcv, KindMsgctl:
		if len(args) == 0 {
			return op, fmt.Errorf("%s needs a queue (hN or id=N)", op.Kind)
		}
		if op.Obj, err = parseRef(args[0]); err != nil {
			return op, err
		}
		args = args[1:]
		var rest []string
		for _, a := range args {
			ok, err := parseMsgArg(&op, a)
			if err != nil {
				return op, err
			}
			if !ok {
				rest = append(rest, a)
			}
		}
		args = rest
	case KindShmat:
		if len(args) == 0 {
			return op, fmt.Errorf("shmat needs a segment (hN or id=N)")
		}
		if op.Obj, err = parseRef(args[0]); err != nil {
			return op, err
		}
		args = args[1:]
	case KindShmdt:
		if len(args) == 0 {
			return op, fmt.Errorf("shmdt needs an attachment (aN)")
		}
		if op.Att, err = parseAtt(args[0]); err != nil {
			return op, err
		}
		args = args[1:]
	case KindShmctl:
		if len(args) < 2 {
			return op, fmt.Errorf("shmctl needs a segment (hN or id=N) and a command")
		}
		if op.Obj, err = parseRef(args[0]); err != nil {
			return op, err
		}
		for c, n := range shmCmdNames {
			if n == args[1] {
				op.Cmd = c
			}
		}
		if op.Cmd == 0 {
			return op, fmt.Errorf("unknown shmctl command %q", args[1])
		}
		args = args[2:]
	case KindNextID, KindLimit, KindRmidForced:
		if len(args) == 0 {
			return op, fmt.Errorf("%s needs a value", op.Kind)
		}
		if op.Value, err = strconv.ParseInt(args[0], 10, 64); err != nil {
			return op, fmt.Errorf("%s value %q: %w", op.Kind, args[0], err)
		}
		args = args[1:]
	}
	sawKey, sawMode, sawOwner := false, false, false
	for _, a := range args {
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case op.Kind == KindList && a == "rows":
			op.Rows = true
		case op.Kind == KindShmat && shmatFlag(a) != 0:
			op.Flags |= shmatFlag(a)
		case op.Kind == KindShmctl && op.Cmd == ShmIPCSet && name == "owner" && hasVal:
			u, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return op, fmt.Errorf("owner %q: %w", val, err)
			}
			op.Value, sawOwner = int64(u), true
		case op.Kind == KindShmctl && op.Cmd == ShmIPCSet && name == "mode" && hasVal:
			m, err := strconv.ParseUint(val, 8, 16)
			if err != nil || m > 0777 {
				return op, fmt.Errorf("mode %q: want octal 0..0777", val)
			}
			op.Mode, sawMode = uint16(m), true
		case name == "task" && hasVal && taskAllowed(op.Kind):
			t, err := parseTask(val)
			if err != nil {
				return op, err
			}
			op.Task = t
		case op.Kind == KindGet && a == "creat":
			op.Creat = true
		case op.Kind == KindGet && a == "excl":
			op.Excl = true
		case op.Kind == KindGet && name == "key" && hasVal:
			k, err := parseKey(val)
			if err != nil {
				return op, err
			}
			op.Key, sawKey = k, true
		case op.Kind == KindGet && name == "mode" && hasVal:
			m, err := strconv.ParseUint(val, 8, 16)
			if err != nil || m > 0777 {
				return op, fmt.Errorf("mode %q: want octal 0..0777", val)
			}
			op.Mode, sawMode = uint16(m), true
		case op.Kind == KindGet && name == "size" && hasVal:
			if op.Size, err = strconv.ParseInt(val, 10, 64); err != nil {
				return op, fmt.Errorf("size %q: %w", val, err)
			}
		case name == "as" && hasVal && asAllowed(op.Kind):
			u, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return op, fmt.Errorf("as %q: %w", val, err)
			}
			op.As = uint32(u)
		default:
			return op, fmt.Errorf("unexpected argument %q for %s", a, op.Kind)
		}
	}
	if op.Kind == KindGet && (!sawKey || !sawMode) {
		return op, fmt.Errorf("get needs key= and mode=")
	}
	if op.Kind == KindShmctl && op.Cmd == ShmIPCSet && (!sawOwner || !sawMode) {
		return op, fmt.Errorf("shmctl set needs owner= and mode=")
	}
	if op.Kind == KindExit && op.Task == 0 {
		return op, fmt.Errorf("exit needs task=tN with N in 1..%d (t0, the main task, cannot exit)", MaxTask)
	}
	if op.Task != 0 && op.Type != Shm && !isMsgKind(op.Kind) && !(op.Kind == KindRmid && op.Type == Msg) {
		return op, fmt.Errorf("task= is only for shm and msg operations")
	}
	if isMsgKind(op.Kind) {
		if op.Type != Msg {
			return op, fmt.Errorf("%s is an operation on msg, not %s", op.Kind, op.Type)
		}
		if err := checkMsgOp(op); err != nil {
			return op, err
		}
	}
	return op, nil
}

// asAllowed reports whether an operation of kind k can run as another user.
func asAllowed(k Kind) bool {
	switch k {
	case KindNextID, KindLimit, KindList, KindExit, KindRmidForced, KindShmdt:
		return false
	}
	return true
}

// taskAllowed reports whether an operation of kind k names a task.
func taskAllowed(k Kind) bool {
	switch k {
	case KindNextID, KindLimit, KindList, KindRmidForced:
		return false
	}
	return true
}

func parseTask(s string) (uint8, error) {
	v, ok := strings.CutPrefix(s, "t")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 || n > MaxTask {
		return 0, fmt.Errorf("task %q: want t0..t%d", s, MaxTask)
	}
	return uint8(n), nil
}

var shmatFlagNames = []struct {
	bit  uint8
	name string
}{{ShmatRdonly, "rdonly"}, {ShmatExec, "exec"}, {ShmatBadAddr, "badaddr"}}

func shmatFlag(s string) uint8 {
	for _, f := range shmatFlagNames {
		if f.name == s {
			return f.bit
		}
	}
	return 0
}

func parseAtt(s string) (int, error) {
	v, ok := strings.CutPrefix(s, "a")
	a, err := strconv.Atoi(v)
	if !ok || err != nil || a <= 0 {
		return 0, fmt.Errorf("attachment %q: want aN with N > 0", s)
	}
	return a, nil
}

func parseHandle(s string) (int, error) {
	if !strings.HasPrefix(s, "h") {
		return 0, fmt.Errorf("handle %q: want hN", s)
	}
	h, err := strconv.Atoi(s[1:])
	if err != nil || h <= 0 {
		return 0, fmt.Errorf("handle %q: want hN with N > 0", s)
	}
	return h, nil
}

func parseRef(s string) (Ref, error) {
	if v, ok := strings.CutPrefix(s, "id="); ok {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Ref{}, fmt.Errorf("id %q: %w", v, err)
		}
		return Ref{ID: id}, nil
	}
	h, err := parseHandle(s)
	return Ref{Handle: h}, err
}

func parseKey(s string) (int32, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil || !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("key %q: want 0x followed by up to 8 hex digits", s)
	}
	return int32(uint32(v)), nil
}

// ParseResult reads the canonical text of a result of op, with the
// completions that may follow it.
func ParseResult(op Op, text string) (Result, error) {
	parts := strings.Split(text, " ; ")
	r, err := parseResult(op, strings.TrimSpace(parts[0]))
	if err != nil {
		return r, err
	}
	if len(parts) > 1 {
		if r.Done, err = parseDone(parts[1:]); err != nil {
			return r, err
		}
	}
	return r, nil
}

func parseResult(op Op, text string) (Result, error) {
	k := op.Kind
	var r Result
	if strings.HasPrefix(text, "E") || strings.HasPrefix(text, "errno") {
		e, err := ParseErrno(text)
		if err != nil {
			return r, err
		}
		if e == OK {
			return r, fmt.Errorf("error result %q is not an error", text)
		}
		r.Err = e
		return r, nil
	}
	switch k {
	case KindMsgsnd, KindMsgrcv, KindMsgctl:
		return parseMsgResult(op, text)
	case KindGet:
		v, ok := strings.CutPrefix(text, "id=")
		id, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return r, fmt.Errorf("get result %q: want id=N or an error name", text)
		}
		r.ID = id
	case KindStat:
		for _, a := range strings.Fields(text) {
			name, val, _ := strings.Cut(a, "=")
			var err error
			switch name {
			case "key":
				r.Obj.Key, err = parseKey(val)
			case "mode":
				var m uint64
				m, err = strconv.ParseUint(val, 8, 16)
				r.Obj.Mode = uint16(m)
			case "owner":
				var u uint64
				u, err = strconv.ParseUint(val, 10, 32)
				r.Obj.Owner = uint32(u)
			case "size":
				r.Obj.Size, err = strconv.ParseInt(val, 10, 64)
			default:
				err = fmt.Errorf("unknown field")
			}
			if err != nil {
				return r, fmt.Errorf("stat result field %q: %v", a, err)
			}
		}
	case KindShmctl:
		return parseShmctlResult(text)
	case KindList:
		inner, ok := strings.CutPrefix(text, "[")
		inner, ok2 := strings.CutSuffix(inner, "]")
		if !ok || !ok2 {
			return r, fmt.Errorf("list result %q: want [id:key ...]", text)
		}
		if op.Rows {
			r.Rows = []Row{}
			if strings.TrimSpace(inner) == "" {
				return r, nil
			}
			for _, part := range strings.Split(inner, "|") {
				row, err := ParseRow(op.Type, strings.TrimSpace(part))
				if err != nil {
					return r, err
				}
				r.Rows = append(r.Rows, row)
			}
			return r, nil
		}
		for _, e := range strings.Fields(inner) {
			ids, keys, ok := strings.Cut(e, ":")
			id, err := strconv.ParseInt(ids, 10, 64)
			if !ok || err != nil {
				return r, fmt.Errorf("list entry %q: want id:key", e)
			}
			key, err := parseKey(keys)
			if err != nil {
				return r, err
			}
			r.List = append(r.List, Entry{ID: id, Key: key})
		}
	default:
		if text != "ok" {
			return r, fmt.Errorf("%s result %q: want ok or an error name", k, text)
		}
	}
	return r, nil
}
