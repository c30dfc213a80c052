package ops

import "strings"

// chooser is a field whose value chooses what an operation does (a
// command, an advice, permissions), not where or how much: a cause's key
// keeps it (Cause).
type chooser interface {
	chooses()
	// others returns a setter of each value the field takes other than
	// the current one (Alternatives).
	others(o *Op) []func(*Op)
}

func (enumField[S, T]) chooses() {}
func (protField) chooses()       {}
func (adviceField) chooses()     {}

func (f enumField[S, T]) others(o *Op) []func(*Op) {
	s, ok := any(o).(*S)
	if !ok {
		return nil
	}
	var out []func(*Op)
	for _, n := range f.names {
		if n.v != *f.p(s) {
			out = append(out, func(o *Op) {
				if s, ok := any(o).(*S); ok {
					*f.p(s) = n.v
				}
			})
		}
	}
	return out
}

func (protField) others(o *Op) []func(*Op) {
	var out []func(*Op)
	for p := VMAProt(0); p <= ProtRead|ProtWrite|ProtExec; p++ {
		if p != o.VMA.Prot {
			out = append(out, func(o *Op) { o.VMA.Prot = p })
		}
	}
	return out
}

func (adviceField) others(o *Op) []func(*Op) {
	var out []func(*Op)
	for _, a := range VMAAdvices {
		if a != o.VMA.Advice {
			out = append(out, func(o *Op) { o.VMA.Advice = a })
		}
	}
	return out
}

// Alternative is one argument of an operation that its cause key keeps
// (Cause), with the operation under each other value of it: the scripts
// that tell whether the value matters to a divergence.
type Alternative struct {
	// Arg is the argument's index in the kind's arguments (GeneralCause).
	Arg int
	// Name says which it is, with its value: "the protection (rw-)",
	// "cmd (IPC_STAT)".
	Name string
	// Ops is the operation with each other value of the argument.
	Ops []Op
}

// Alternatives lists the arguments of op that Cause keeps as a value (a
// command, an advice, a protection; not a flag word), each with op under
// every other value it takes.
func Alternatives(op Op) []Alternative {
	s := Spec(op.Kind)
	if s == nil {
		return nil
	}
	var out []Alternative
	for i := range s.Args {
		a := &s.Args[i]
		if !a.present(&op) || a.flag != nil || isMapProt(op, a.field) {
			continue
		}
		c, ok := a.field.(chooser)
		if !ok {
			continue
		}
		alt := Alternative{Arg: i, Name: a.Name}
		switch a.field.(type) {
		case protField:
			alt.Name = "the protection"
		case adviceField:
			alt.Name = "the advice"
		}
		if alt.Name == "" {
			alt.Name = "the value"
		}
		alt.Name += " (" + a.field.format(&op) + ")"
		for _, set := range c.others(&op) {
			v := op
			set(&v)
			alt.Ops = append(alt.Ops, v)
		}
		if len(alt.Ops) > 0 {
			out = append(out, alt)
		}
	}
	return out
}

// reportWords are flag words that choose only how an outcome is reported
// (blocked or EAGAIN/ENOMSG; E2BIG or a truncated message; EFAULT for
// the copy to or from a bad buffer where the call gets that far), not what
// the operation does: a cause's key leaves them out.
var reportWords = map[string]bool{"nowait": true, "noerror": true, "badbuf": true}

// Cause is what of op says what it does, the key that groups divergences
// into causes (harness/runner): two shrunk scripts whose first divergence
// is at operations of the same cause most likely show one bug, whatever
// the two sides' result classes there. It is the operation's name, its
// type word, and the arguments that choose what it does (commands,
// advices, permissions, flag words other than nowait and noerror),
// without those that say where, how much or by whom (handles, ids,
// addresses, sizes, values, task= and as=): "msgrcv msg except",
// "advise guard_install", "remap fixed". A kind's KindSpec.Cause adds what
// else of it matters (msgrcv: the sign of its type, which picks the search);
// its KindSpec.CauseName replaces its name where two kinds are one call in
// two directions ("mlock" for lock and unlock).
func Cause(op Op) string { return cause(op, true, nil) }

// GeneralCause is Cause (or UntypedCause where typed is false) with the
// value of each argument in wild (indexes in the kind's arguments, as
// Alternative.Arg) written as "*": a cause whose divergence shows with any
// value there ("protect *": a sealed range refuses every protection).
// CauseCovers matches it with the keys it generalizes.
func GeneralCause(op Op, typed bool, wild map[int]bool) string { return cause(op, typed, wild) }

// CauseCovers reports whether cause key general, in which "*" stands for
// any value of an argument (GeneralCause), matches key: the same words,
// but where general has "*" or "name=*".
func CauseCovers(general, key string) bool {
	g, k := strings.Fields(general), strings.Fields(key)
	if len(g) != len(k) {
		return false
	}
	for i := range g {
		switch {
		case g[i] == k[i], g[i] == "*":
		case strings.HasSuffix(g[i], "=*") && strings.HasPrefix(k[i], g[i][:len(g[i])-1]):
		default:
			return false
		}
	}
	return true
}

// UntypedCause is Cause without the IPC type word: the key where the
// three types run one code (the ids subsystem's operations all run
// ipc/util.c's allocator and listing, so a bug there shows on each type,
// and the type says where it was seen, not what it is).
func UntypedCause(op Op) string { return cause(op, false, nil) }

func cause(op Op, typed bool, wild map[int]bool) string {
	s := Spec(op.Kind)
	if s == nil {
		return op.Kind.String()
	}
	parts := []string{s.Name}
	if s.CauseName != "" {
		parts[0] = s.CauseName
	}
	if typed && s.typed() {
		parts = append(parts, op.Type.String())
	}
	for i := range s.Args {
		a := &s.Args[i]
		if !a.present(&op) {
			continue
		}
		switch {
		case a.flag != nil:
			if a.flag.get(&op) && !reportWords[a.Name] {
				parts = append(parts, a.Name)
			}
		case isMapProt(op, a.field):
			// A new mapping's protection says what its memory allows,
			// not what mmap does (mprotect's does).
		case isChooser(a.field):
			v := a.field.format(&op)
			if wild[i] {
				v = "*"
			}
			if a.Name != "" {
				v = a.Name + "=" + v
			}
			parts = append(parts, v)
		}
	}
	if s.Cause != nil {
		if extra := s.Cause(op); extra != "" {
			parts = append(parts, extra)
		}
	}
	return strings.Join(parts, " ")
}

func isMapProt(op Op, f field[Op]) bool {
	_, prot := f.(protField)
	return prot && op.Kind == KindMap
}

func isChooser(f field[Op]) bool {
	_, ok := f.(chooser)
	return ok
}

// Observes reports whether op only observes the state (a layout, a
// listing, a stat, a semctl getzcnt): a divergence there shows what an
// earlier operation did.
func Observes(op Op) bool {
	s := Spec(op.Kind)
	return s != nil && (s.Observes || s.Reads != nil && s.Reads(op))
}
