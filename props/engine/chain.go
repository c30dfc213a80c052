package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// CompareChain runs script on each pair of a chain (naive-optimized,
// optimized-kernel, ...): both states must satisfy the invariant and the
// sides must agree under the pair's relation. On a divergence it shrinks
// the script and returns an error holding the minimal script in canonical
// text.
func (s Subsystem) CompareChain(ctx context.Context, script []ops.Op, pairs []*runner.Pair) error {
	for _, p := range pairs {
		v, err := p.CheckOne(ctx, script)
		if err != nil {
			return fmt.Errorf("%s vs %s: %w\n%s", p.A.Name, p.B.Name, err, ops.Format(ops.NewScript(s.Name, script)))
		}
		if !v.Diverged() {
			continue
		}
		sh, err := p.Shrink(ctx, script, v, nil)
		if err != nil {
			return fmt.Errorf("%s vs %s: %v: %w\n%s", p.A.Name, p.B.Name, v.Div, err, ops.Format(ops.NewScript(s.Name, script)))
		}
		why := sh.Verdict.Div
		if sh.Flaky {
			why = v.Div
		}
		cut := ""
		if sh.TimeUp {
			cut = fmt.Sprintf("; the shrink was cut short: its %v were up", p.ShrinkTime)
		}
		if len(sh.Skipped) > 0 {
			cut += fmt.Sprintf("; the shrink was cut short, %d steps failed on a side: %s", len(sh.Skipped), strings.Join(sh.Skipped, "; "))
		}
		return fmt.Errorf("%s vs %s: %v\nminimal script (%d of %d ops%s):\n%s", p.A.Name, p.B.Name, why, len(sh.Script), len(script), cut, ops.Format(ops.NewScript(s.Name, sh.Script)))
	}
	return nil
}

// Chain builds the pairs of a chain of sides, each with the next, compared
// exactly (Subsystem.Pair).
func (s Subsystem) Chain(ctx context.Context, sides []runner.Side) ([]*runner.Pair, error) {
	var pairs []*runner.Pair
	for i := 1; i < len(sides); i++ {
		p, err := s.Pair(ctx, sides[i-1], sides[i], equiv.Exact)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// FuzzShrinkTime bounds the shrink of a divergence a fuzz input shows: go
// test -fuzz's worker panics ("deadlocked!", without a word) when one call
// of the fuzz function takes ten seconds, and a script that wraps seq
// takes a fifth of a second a candidate on the models.
const FuzzShrinkTime = 4 * time.Second

// Fuzz is the body of a go test -fuzz target: each input's bytes are the
// generator's choices (one byte a choice, see ByteSource), the script they
// draw runs on every pair of the chain of sides, and a divergence fails
// with the minimal script.
func (s Subsystem) Fuzz(f *testing.F, sides []runner.Side) {
	pairs, err := s.Chain(context.Background(), sides)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range pairs {
		p.ShrinkTime = FuzzShrinkTime
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script := s.DrawFuzz(&ByteSource{Data: data})
		if err := s.CompareChain(context.Background(), script, pairs); err != nil {
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
