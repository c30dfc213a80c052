// Package vmatest holds what the tests of the VMA implementations share: a
// script of operations on an ops.AddressSpace, a way to run it, and rapid
// generators of scripts whose neighbouring VMAs make merges interesting
// (same and different protections, faulted and unfaulted anonymous memory,
// files at contiguous and non-contiguous offsets, requests that fail on
// purpose).
package vmatest

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Op names an operation of ops.AddressSpace.
type Op string

// The operations.
const (
	Map     Op = "map"
	Unmap   Op = "unmap"
	Protect Op = "protect"
	Touch   Op = "touch"
	Advise  Op = "advise"
	Lock    Op = "lock"
	Unlock  Op = "unlock"
	Remap   Op = "remap"
	Brk     Op = "brk"
	Open    Op = "open"
	Reopen  Op = "reopen"
	Dup     Op = "dup"
)

// Call is one operation with its arguments.
type Call struct {
	Op   Op
	Args ops.VMAArgs
	File ops.VMAFileArgs
}

// Apply runs c on as.
func Apply(as ops.AddressSpace, c Call) (ops.Errno, error) {
	switch c.Op {
	case Map:
		return as.Map(c.Args)
	case Unmap:
		return as.Unmap(c.Args)
	case Protect:
		return as.Protect(c.Args)
	case Touch:
		return as.Touch(c.Args)
	case Advise:
		return as.Advise(c.Args)
	case Lock:
		return as.Lock(c.Args)
	case Unlock:
		return as.Unlock(c.Args)
	case Remap:
		return as.Remap(c.Args)
	case Brk:
		return as.Brk(c.Args)
	case Open:
		return as.Open(c.File)
	case Reopen:
		return as.Reopen(c.File)
	case Dup:
		return as.Dup(c.File)
	}
	return 0, fmt.Errorf("vmatest: unknown operation %q", c.Op)
}

func region(a ops.VMAArgs) string {
	if a.Heap {
		return "h"
	}
	return "w"
}

// String writes c readably (for reports of minimal scripts).
func (c Call) String() string {
	a := c.Args
	rng := fmt.Sprintf("%s:%d+%d", region(a), a.Start, a.Pages)
	switch c.Op {
	case Map:
		s := fmt.Sprintf("map %s %s %s", rng, a.Prot, a.Flags)
		if a.File != 0 {
			s += fmt.Sprintf(" f=h%d@%d", a.File, a.Offset)
		}
		return s
	case Protect:
		return fmt.Sprintf("protect %s %s", rng, a.Prot)
	case Touch:
		if a.Write {
			return fmt.Sprintf("touch %s:%d write", region(a), a.Start)
		}
		return fmt.Sprintf("touch %s:%d read", region(a), a.Start)
	case Advise:
		return fmt.Sprintf("advise %s %s", rng, a.Advice)
	case Lock:
		if a.OnFault {
			return fmt.Sprintf("lock %s onfault", rng)
		}
		return fmt.Sprintf("lock %s", rng)
	case Remap:
		if a.Fixed {
			return fmt.Sprintf("remap %s to %d fixed=%s:%d", rng, a.NewPages, region(a), a.Target)
		}
		return fmt.Sprintf("remap %s to %d", rng, a.NewPages)
	case Brk:
		return fmt.Sprintf("brk %d", a.Break)
	case Open:
		return fmt.Sprintf("open h%d%s", c.File.Handle, readOnly(c.File))
	case Reopen, Dup:
		return fmt.Sprintf("%s h%d of=h%d%s", c.Op, c.File.Handle, c.File.Of, readOnly(c.File))
	}
	return fmt.Sprintf("%s %s", c.Op, rng)
}

func readOnly(f ops.VMAFileArgs) string {
	if f.ReadOnly {
		return " ro"
	}
	return ""
}

// Step is what one call gave: its errno and the state after it.
type Step struct {
	Errno ops.Errno
	State ops.VMAState
}

// Run resets as, then applies every call and takes the state after each.
func Run(as ops.AddressSpace, calls []Call) ([]Step, error) {
	if err := as.Reset(); err != nil {
		return nil, fmt.Errorf("reset: %w", err)
	}
	out := make([]Step, 0, len(calls))
	for i, c := range calls {
		e, err := Apply(as, c)
		if err != nil {
			return out, fmt.Errorf("call %d (%s): %w", i+1, c, err)
		}
		st, err := as.State()
		if err != nil {
			return out, fmt.Errorf("state after call %d (%s): %w", i+1, c, err)
		}
		out = append(out, Step{Errno: e, State: st})
	}
	return out, nil
}

// Diff compares two runs of calls; "" if they agree. Otherwise it names
// the first call where they differ and shows both sides.
func Diff(calls []Call, a, b []Step, nameA, nameB string) string {
	for i := range min(len(a), len(b)) {
		sa, sb := ops.FormatVMAState(a[i].State), ops.FormatVMAState(b[i].State)
		if a[i].Errno == b[i].Errno && sa == sb {
			continue
		}
		var w strings.Builder
		fmt.Fprintf(&w, "call %d differs: %s\n", i+1, calls[i])
		fmt.Fprintf(&w, "script:\n%s", FormatCalls(calls[:i+1]))
		fmt.Fprintf(&w, "%s: %s\n%s", nameA, a[i].Errno, sa)
		fmt.Fprintf(&w, "%s: %s\n%s", nameB, b[i].Errno, sb)
		return w.String()
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%s ran %d calls, %s %d", nameA, len(a), nameB, len(b))
	}
	return ""
}

// FormatCalls writes one call a line.
func FormatCalls(calls []Call) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

// Minimize removes calls from a failing script, one at a time, as long as
// it still fails: a script where no single call can go.
func Minimize(calls []Call, fails func([]Call) bool) []Call {
	for i := 0; i < len(calls); {
		shorter := append(append([]Call(nil), calls[:i]...), calls[i+1:]...)
		if fails(shorter) {
			calls = shorter
		} else {
			i++
		}
	}
	return calls
}
