package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ReplayError is a replayed script that failed: the sides disagree with each
// other or with expectations the script states. Problems lists every
// problem, one line each.
type ReplayError struct {
	Problems []string
	Table    string // both sides' results side by side
}

func (e *ReplayError) Error() string { return strings.Join(e.Problems, "; ") }

// Mismatches lists, one line each, every step whose result on out differs
// from the result the script states for it.
func Mismatches(sc *ops.Script, name string, out ops.Outcome) []string {
	var lines []string
	for i, st := range sc.Steps {
		if st.Want == nil {
			continue
		}
		if i >= len(out.Results) {
			lines = append(lines, fmt.Sprintf("step %d (%s): %s returned nothing, the script expects %s", i+1, ops.FormatOp(st.Op), name, ops.FormatResult(st.Op, *st.Want)))
			continue
		}
		if !equiv.SameResult(st.Op, out.Results[i], *st.Want) {
			lines = append(lines, fmt.Sprintf("step %d (%s): %s returned %s, the script expects %s", i+1, ops.FormatOp(st.Op), name,
				ops.FormatResult(st.Op, out.Results[i]), ops.FormatResult(st.Op, *st.Want)))
		}
	}
	return lines
}

// Stated returns the outcome a script states, when it states every result
// (for a model to follow), or nil.
func Stated(sc *ops.Script) []ops.Outcome {
	var o ops.Outcome
	for _, st := range sc.Steps {
		if st.Want == nil {
			return nil
		}
		o.Results = append(o.Results, *st.Want)
	}
	return []ops.Outcome{o}
}

// CheckStated runs a script on one side and returns every step whose
// result differs from the one the script states. A side that follows
// follows the stated results when the script states them all.
func CheckStated(ctx context.Context, sc *ops.Script, s Side) ([]string, error) {
	var follow []ops.Outcome
	if s.Follows {
		follow = Stated(sc)
	}
	out, err := execSide(ctx, s, [][]ops.Op{sc.Ops()}, follow)
	if err != nil {
		return nil, err
	}
	return Mismatches(sc, s.Name, out[0]), nil
}

// Replay runs one script on a and b (each reset with its Config) and checks
// that they agree under rel and that each matches every expected result the
// script states; a ReplayError lists every problem, not only the first.
func Replay(ctx context.Context, sc *ops.Script, a, b Side, rel equiv.Relation) error {
	script := sc.Ops()
	outA, outB, errA, errB := ExecBoth(ctx, a, b, [][]ops.Op{script})
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	table := corpus.SideBySide(script, corpus.Side{Name: a.Name, Results: outA[0].Results}, corpus.Side{Name: b.Name, Results: outB[0].Results}, "  ")
	var problems []string
	if d := equiv.Compare(rel, script, outA[0], outB[0]); d != nil {
		problems = append(problems, "the implementations disagree at "+d.Error())
	}
	problems = append(problems, Mismatches(sc, a.Name, outA[0])...)
	problems = append(problems, Mismatches(sc, b.Name, outB[0])...)
	if len(problems) > 0 {
		return &ReplayError{Problems: problems, Table: table}
	}
	return nil
}
