package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// recorder is a sink that keeps every event, in order.
type recorder struct {
	events []any
}

func (r *recorder) Start(s runner.Start)   { r.events = append(r.events, s) }
func (r *recorder) Script(s runner.Script) { r.events = append(r.events, s) }
func (r *recorder) Found(f runner.Found)   { r.events = append(r.events, f) }
func (r *recorder) End(e runner.End)       { r.events = append(r.events, e) }

// The sink is told the start, then every script compared, in order, with
// its verdict (agree, diverged, expected) and signature, each finding
// once, before the script that first showed it, and the end with the
// result: what every output format is made from.
func TestSinkIsToldEveryScript(t *testing.T) {
	a, b := knownSides(t)
	entries, err := corpus.ParseKnown("msg.known", "msg/msgrcv/ok-ENOMSG  <6.10  -  the lowest type is not searched before 6.10\n")
	require.NoError(t, err)
	p, err := runner.NewPair(context.Background(), a, b, "msg", equiv.Exact)
	require.NoError(t, err)
	rec := &recorder{}
	res, _ := keepGoing(t, p, runner.Options{Command: "the command", Engine: "rapid", Checks: 400, Batch: 64, Known: &corpus.Known{Entries: entries}, Sink: rec})

	require.Equal(t, runner.Start{Command: "the command", A: a.Name, B: b.Name, KernelA: "6.1.0-57-amd64", KernelB: "6.18.44-fc",
		Subsystem: "msg", Relation: "exact", Engine: "rapid", Seed: 1, Checks: 400, KeepGoing: true}, rec.events[0])
	require.Equal(t, runner.End{Result: res}, rec.events[len(rec.events)-1])
	verdicts := map[runner.ScriptVerdict]int{}
	found := map[string]bool{}
	next := 0
	for _, ev := range rec.events[1 : len(rec.events)-1] {
		switch ev := ev.(type) {
		case runner.Found:
			require.False(t, found[ev.Finding.Signature], "found twice: %s", ev.Finding.Signature)
			found[ev.Finding.Signature] = true
			require.Contains(t, ev.Text, "# signature: "+ev.Finding.Signature+"\n")
		case runner.Script:
			require.Equal(t, next, ev.Index)
			next++
			verdicts[ev.Verdict]++
			require.Positive(t, ev.Ops)
			if ev.Verdict == runner.ScriptAgree {
				require.Empty(t, ev.Signature)
			} else {
				require.NotEmpty(t, ev.Signature)
			}
			if ev.Verdict == runner.ScriptDiverged {
				require.True(t, found[ev.Signature], "script %d diverged as %s, not found before", ev.Index, ev.Signature)
			}
		default:
			t.Fatalf("an event %T between the start and the end", ev)
		}
	}
	require.Equal(t, res.Checks, next)
	require.Equal(t, len(res.Findings), len(found))
	require.Equal(t, res.Divergences, verdicts[runner.ScriptDiverged])
	require.Equal(t, res.ExpectedHits(), verdicts[runner.ScriptExpected])
	require.Positive(t, verdicts[runner.ScriptExpected])
	require.Positive(t, verdicts[runner.ScriptDiverged])
	require.Equal(t, res.Checks-res.Divergences-res.ExpectedHits(), verdicts[runner.ScriptAgree])
}
