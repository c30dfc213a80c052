package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/shrink"
)

// CompareChain runs script on every side, checks every final state against
// the invariant and compares each side exactly with the next (a side that
// follows runs after the one before it). On a divergence it shrinks the
// script and returns an error holding the minimal script in canonical
// text.
func (s Subsystem) CompareChain(ctx context.Context, script []ops.Op, sides []runner.Side) error {
	for i := 1; i < len(sides); i++ {
		a, b := sides[i-1], sides[i]
		fails := func(cand []ops.Op) (string, error) {
			outA, outB, errA, errB := runner.ExecBoth(ctx, a, b, [][]ops.Op{cand})
			if err := errors.Join(errA, errB); err != nil {
				return "", err
			}
			for side, o := range []ops.Outcome{outA[0], outB[0]} {
				if s.Invariant != nil {
					if err := s.Invariant(o.Snapshot); err != nil {
						return fmt.Sprintf("%s: invariant: %v", []string{a.Name, b.Name}[side], err), nil
					}
				}
			}
			if d := equiv.Compare(equiv.Exact, cand, outA[0], outB[0]); d != nil {
				return d.Error(), nil
			}
			return "", nil
		}
		why, err := fails(script)
		if err != nil {
			return fmt.Errorf("%s vs %s: %w\n%s", a.Name, b.Name, err, ops.Format(ops.NewScript(s.Name, script)))
		}
		if why == "" {
			continue
		}
		min, _ := shrink.Minimize(ctx, script, func(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
			out := make([]bool, len(cands))
			for j, c := range cands {
				w, err := fails(c)
				if err != nil {
					return nil, err
				}
				out[j] = w != ""
			}
			return out, nil
		})
		if w, err := fails(min); err == nil && w != "" {
			why = w
		} else {
			min = script
		}
		return fmt.Errorf("%s vs %s: %s\nminimal script (%d of %d ops):\n%s", a.Name, b.Name, why, len(min), len(script), ops.Format(ops.NewScript(s.Name, min)))
	}
	return nil
}

// Fuzz is the body of a go test -fuzz target: each input's bytes are the
// generator's choices (one byte a choice, see ByteSource), the script they
// draw runs on every side, and a divergence fails with the minimal script.
func (s Subsystem) Fuzz(f *testing.F, sides []runner.Side) {
	ptrs := make([]*runner.Side, len(sides))
	for i := range sides {
		ptrs[i] = &sides[i]
	}
	if err := runner.ShareLimits(context.Background(), ptrs); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script := s.DrawFuzz(&ByteSource{Data: data})
		if err := s.CompareChain(context.Background(), script, sides); err != nil {
			t.Fatal(err)
		}
	})
}

// TextRoundTrip is the property parse(format(x)) == x for the scripts the
// subsystem draws, with the results m gives attached as expectations on a
// random part of the steps.
func (s Subsystem) TextRoundTrip(m ops.Model) func(*rapid.T) {
	return func(t *rapid.T) {
		script := s.Draw(NewRapidSource(t), equiv.Exact)
		out, err := ops.Run(m, ops.Config{}, script)
		if err != nil {
			t.Fatal(err)
		}
		sc := ops.NewScript(s.Name, script)
		for i := range sc.Steps {
			if rapid.Bool().Draw(t, "with result") {
				r := out.Results[i]
				r.Alternatives = 0
				sc.Steps[i].Want = &r
			}
		}
		text := ops.Format(sc)
		back, err := ops.ParseString(text)
		if err != nil {
			t.Fatalf("parse(format(x)): %v\n%s", err, text)
		}
		if again := ops.Format(back); again != text {
			t.Fatalf("format(parse(format(x))) differs:\n%s\nvs\n%s", text, again)
		}
		for i := range sc.Steps {
			if !equalStep(sc.Steps[i], back.Steps[i]) {
				t.Fatalf("parse(format(x)) != x at step %d:\n%+v\nparsed back as\n%+v\nin\n%s", i+1, sc.Steps[i].Op, back.Steps[i].Op, text)
			}
		}
	}
}

// equalStep compares steps as values: operations exactly, expectations by
// their text (nil and empty lists are one thing there).
func equalStep(a, b ops.Step) bool {
	if a.Op != b.Op || (a.Want == nil) != (b.Want == nil) {
		return false
	}
	return a.Want == nil || ops.FormatResult(a.Op, *a.Want) == ops.FormatResult(b.Op, *b.Want)
}
