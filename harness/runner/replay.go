package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ReplayError is a replayed script that failed: the sides disagree with each
// other or with an expectation the script states.
type ReplayError struct {
	Problem string
	Table   string // both sides' results side by side
}

func (e *ReplayError) Error() string { return e.Problem }

// Replay runs one script on a and b (each reset with its Config) and checks that they agree under rel and
// that each matches every expected result the script states.
func Replay(ctx context.Context, sc *ops.Script, a, b Side, rel equiv.Relation) error {
	script := sc.Ops()
	outA, outB, errA, errB := execBoth(ctx, a, b, [][]ops.Op{script})
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	table := corpus.SideBySide(script, corpus.Side{Name: a.Name, Results: outA[0].Results}, corpus.Side{Name: b.Name, Results: outB[0].Results}, "  ")
	if d := equiv.Compare(rel, script, outA[0], outB[0]); d != nil {
		return &ReplayError{Problem: "the implementations disagree at " + d.Error(), Table: table}
	}
	for i, st := range sc.Steps {
		if st.Want == nil {
			continue
		}
		want := ops.FormatResult(st.Op, *st.Want)
		for side, out := range []ops.Outcome{outA[0], outB[0]} {
			if got := ops.FormatResult(st.Op, out.Results[i]); got != want {
				return &ReplayError{
					Problem: fmt.Sprintf("step %d (%s): %s returned %s, the script expects %s", i+1, ops.FormatOp(st.Op), []string{a.Name, b.Name}[side], got, want),
					Table:   table,
				}
			}
		}
	}
	return nil
}
