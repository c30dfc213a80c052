package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ScriptReader reads a script one step at a time, as strictly as Parse and
// with the same errors, holding only the step it read and the handles bound
// so far: how a script too long to hold at once is replayed.
//
//	r := NewScriptReader(name, f)
//	for r.Next() {
//		use(r.Step())
//	}
//	if err := r.Err(); err != nil { ... }
type ScriptReader struct {
	p     parser
	in    *bufio.Scanner
	step  Step
	steps int
	err   error
	done  bool
}

// NewScriptReader reads a script from in; name is used in error messages
// only.
func NewScriptReader(name string, in io.Reader) *ScriptReader {
	r := &ScriptReader{p: parser{name: name, bound: map[Class]map[int]int{}}, in: bufio.NewScanner(in)}
	r.in.Buffer(make([]byte, 4096), MaxLine)
	r.p.line = 0
	r.p.sc.Steps = make([]Step, 0, 1)
	return r
}

// Next reads the next step. It returns false at the end of the script or at
// the first error (Err tells which).
func (r *ScriptReader) Next() bool {
	if r.done {
		return false
	}
	for r.in.Scan() {
		r.p.line++
		if err := r.p.step(strings.TrimSpace(r.in.Text())); err != nil {
			return r.fail(&ParseError{r.p.name, r.p.line, err})
		}
		if len(r.p.sc.Steps) > 0 {
			// The parser appends every step; hand it out and keep none.
			r.step = r.p.sc.Steps[0]
			r.p.sc.Steps = r.p.sc.Steps[:0]
			r.steps++
			return true
		}
	}
	// Parse counts the line it stopped on, one past the last.
	line := r.p.line + 1
	if err := r.in.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return r.fail(&ParseError{r.p.name, line, fmt.Errorf("line longer than %d bytes", MaxLine)})
		}
		return r.fail(&ParseError{r.p.name, 0, fmt.Errorf("reading: %w", err)})
	}
	switch {
	case r.p.sc.Subsystem == "":
		return r.fail(&ParseError{r.p.name, 0, fmt.Errorf("no 'subsystem' line (want one of %s)", strings.Join(Subsystems(), ", "))})
	case r.steps == 0:
		return r.fail(&ParseError{r.p.name, 0, fmt.Errorf("no operations")})
	}
	r.done = true
	return false
}

func (r *ScriptReader) fail(err error) bool {
	r.err, r.done, r.step = err, true, Step{}
	return false
}

// Step is the step Next read.
func (r *ScriptReader) Step() Step { return r.step }

// Err is the error that stopped Next, a *ParseError, or nil at the end of a
// good script.
func (r *ScriptReader) Err() error { return r.err }

// Subsystem is the script's subsystem, known once Next has read past its
// 'subsystem' line.
func (r *ScriptReader) Subsystem() string { return r.p.sc.Subsystem }

// Steps counts the steps read so far.
func (r *ScriptReader) Steps() int { return r.steps }
