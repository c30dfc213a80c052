package ops

import "strings"

// chooser is a field whose value chooses what an operation does (a
// command, an advice, permissions), not where or how much: a cause's key
// keeps it (Cause).
type chooser interface{ chooses() }

func (enumField[S, T]) chooses() {}
func (protField) chooses()       {}
func (adviceField) chooses()     {}

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
func Cause(op Op) string { return cause(op, true) }

// UntypedCause is Cause without the IPC type word: the key where the
// three types run one code (the ids subsystem's operations all run
// ipc/util.c's allocator and listing, so a bug there shows on each type,
// and the type says where it was seen, not what it is).
func UntypedCause(op Op) string { return cause(op, false) }

func cause(op Op, typed bool) string {
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
	for a := range s.presentArgs(&op) {
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
