package corpus

import (
	"fmt"
	"os"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Expectations are what a reproducer of a file checks: the expected
// result text of each step ("" leaves it unchecked), whose results they
// are, and what the header says of where the file was found.
type Expectations struct {
	Results []string
	From    string
	Notes   []string
}

// Expect takes the expected results from side "a" or "b" of a finding
// or, for a script that is no finding, from the results it states (side
// "a" only); path names the file in the notes.
func (f *Finding) Expect(path, side string) (Expectations, error) {
	e := Expectations{Notes: []string{"From " + path + "."}}
	h := f.Header
	for _, n := range []struct{ key, value string }{
		{"found by", h.Command}, {"kernel it was found on", h.Kernel}, {"date", h.Date},
		{"ipcfuzz revision", h.Revision}, {"signature", h.Signature},
	} {
		if n.value != "" {
			e.Notes = append(e.Notes, n.key+": "+n.value)
		}
	}
	if h.HasSeed {
		e.Notes = append(e.Notes, fmt.Sprintf("seed: %d (script %d, script seed %d)", h.Seed, h.Index, h.ScriptSeed))
	}
	e.Notes = append(e.Notes, f.Notes...)
	steps := f.Script.Ops()
	e.Results = make([]string, len(steps))
	if !f.IsFinding() {
		if side == "b" {
			return e, fmt.Errorf("%s is a script, not a finding: --expect b needs a finding's side B", path)
		}
		e.From = "the results the script states"
		for i, st := range f.Script.Steps {
			if st.Want != nil {
				e.Results[i] = ops.FormatResult(st.Op, *st.Want)
			}
		}
		return e, nil
	}
	letter := strings.ToUpper(side)
	rs, err := f.Expected(letter)
	if err != nil {
		return e, err
	}
	name := f.A.Name
	if letter == "B" {
		name = f.B.Name
	}
	e.From = fmt.Sprintf("side %s of the finding, %s", letter, name)
	for i, r := range rs {
		if i < len(steps) {
			e.Results[i] = ops.FormatResult(steps[i], r)
		}
	}
	return e, nil
}

// SameAtEveryStep reports whether a finding's sides give the same result
// at every step: they differ only in the final state.
func (f *Finding) SameAtEveryStep() (bool, error) {
	a, err := f.Expected("A")
	if err != nil {
		return false, err
	}
	b, err := f.Expected("B")
	if err != nil {
		return false, err
	}
	steps := f.Script.Ops()
	if len(a) != len(b) {
		return false, nil
	}
	for i := range a {
		if i < len(steps) && ops.FormatResult(steps[i], a[i]) != ops.FormatResult(steps[i], b[i]) {
			return false, nil
		}
	}
	return true, nil
}

// FinalOnly is the note of a finding whose sides give the same result at
// every step: its reproducer, which checks results, cannot tell them
// apart.
const FinalOnly = "sides A and B give the same result at every step (they differ in the final state, which the reproducer does not check): it exits 0 whichever side the kernel follows"

// ReadExpect reads the finding (or script) file at path and what its
// reproducer expects of the kernel: the results of side (a or b) of the
// finding, or the script's stated results. finalOnly is FinalOnly, also
// added to the notes, for a finding whose sides give the same result at
// every step; it is "" otherwise.
func ReadExpect(path, side string) (f *Finding, e Expectations, finalOnly string, err error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, e, "", err
	}
	if f, err = ParseFinding(path, string(text)); err != nil {
		return nil, e, "", err
	}
	if err := f.FillFromTable(string(text)); err != nil {
		return nil, e, "", fmt.Errorf("%s: %w", path, err)
	}
	if e, err = f.Expect(path, side); err != nil {
		return nil, e, "", err
	}
	if f.IsFinding() {
		same, err := f.SameAtEveryStep()
		if err != nil {
			return nil, e, "", err
		}
		if same {
			finalOnly = FinalOnly
			e.Notes = append(e.Notes, finalOnly)
		}
	}
	return f, e, finalOnly, nil
}
