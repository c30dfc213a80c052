package ops

import (
	"fmt"
	"slices"
)

// Handlers is one side's table of what runs each kind: a model's method, a
// kernel adapter's call, a reproducer's writer of C. The vocabulary is the
// spec table (KindSpec); Handlers is the implementation half of it, so
// that no implementation switches on the kind by hand.
//
// A side keeps one table per package and each file that implements a
// subsystem adds its kinds from init, beside the code that runs them: a new
// kind touches one file per side. Missing is what the side's test asks, so
// a kind left without a handler fails a test the day it is added.
type Handlers[H any] struct {
	side string
	h    [256]H
	has  [256]bool
}

// NewHandlers returns an empty table for side, the name errors and panics
// give it ("the ipcns model", "the C reproducer").
func NewHandlers[H any](side string) *Handlers[H] { return &Handlers[H]{side: side} }

// Add makes h the handler of kinds. A kind the vocabulary does not have,
// or one that already has a handler, is a programming error (a panic at
// init).
func (t *Handlers[H]) Add(h H, kinds ...Kind) {
	for _, k := range kinds {
		if Spec(k) == nil {
			panic(fmt.Sprintf("ops: %s: handler for unknown kind %d", t.side, k))
		}
		if t.has[k] {
			panic(fmt.Sprintf("ops: %s: two handlers for %s", t.side, k))
		}
		t.h[k], t.has[k] = h, true
	}
}

// Of returns the handler of k, and false when there is none.
func (t *Handlers[H]) Of(k Kind) (H, bool) { return t.h[k], t.has[k] }

// Handles reports whether k has a handler.
func (t *Handlers[H]) Handles(k Kind) bool { return t.has[k] }

// Unhandled is the error for an operation of a kind without a handler.
func (t *Handlers[H]) Unhandled(k Kind) error {
	if s := Spec(k); s != nil {
		return fmt.Errorf("%s has no handler for %s operations (subsystem %s)", t.side, s.Name, s.Subsystem)
	}
	return fmt.Errorf("%s has no handler for unknown kind %d", t.side, k)
}

// Claims lists the subsystems of which the table handles at least one
// kind, in kind order.
func (t *Handlers[H]) Claims() []string {
	var out []string
	for _, s := range Specs() {
		if t.has[s.Kind] && !slices.Contains(out, s.Subsystem) {
			out = append(out, s.Subsystem)
		}
	}
	return out
}

// Missing lists the kinds of subsystems that have no handler; with no
// subsystems named, those of the subsystems the table claims (Claims).
func (t *Handlers[H]) Missing(subsystems ...string) []Kind {
	if len(subsystems) == 0 {
		subsystems = t.Claims()
	}
	var out []Kind
	for _, s := range Specs() {
		if slices.Contains(subsystems, s.Subsystem) && !t.has[s.Kind] {
			out = append(out, s.Kind)
		}
	}
	return out
}
