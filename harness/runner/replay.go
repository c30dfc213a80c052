package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// ReplayError is a replayed script that failed: the sides disagree with each
// other or with expectations the script states. Problems lists every
// problem, one line each.
type ReplayError struct {
	Problems []string
	// Table shows both sides' results side by side: every step of a
	// script of at most ReplayOptions.FullTable steps, else the steps
	// with problems and their context.
	Table string
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
		if m := mismatch(i, st, name, out.Results[i]); m != "" {
			lines = append(lines, m)
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

// ReplayScript replays a script held in memory on both sides (Replay of
// its steps, with the default options).
func (p *Pair) ReplayScript(ctx context.Context, sc *ops.Script) error {
	_, err := p.Replay(ctx, StepsOf(sc), ReplayOptions{})
	return err
}

// The defaults of ReplayOptions.
const (
	DefaultChunk     = 4096
	DefaultFullTable = 10000
	DefaultContext   = 5
)

// ReplayOptions tune Replay. Zero values take the defaults.
type ReplayOptions struct {
	// Chunk is how many operations go to a side in one call. A script
	// no longer than that runs in one Exec per side, as the fuzzing loop
	// runs scripts; a longer one runs as Reset, Apply of each chunk in
	// turn and Snapshot, and is compared chunk by chunk as the results
	// come, so that no more than a few chunks are ever held.
	Chunk int
	// FullTable: a failing script of at most this many steps is reported
	// with the table of all of them (corpus.SideBySide); a longer one with
	// the steps that have problems and Context steps around each.
	FullTable int
	// Context is how many steps before and after each problem a long
	// script's table shows (negative: none).
	Context int
}

func (o ReplayOptions) withDefaults() ReplayOptions {
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	if o.FullTable <= 0 {
		o.FullTable = DefaultFullTable
	}
	switch {
	case o.Context == 0:
		o.Context = DefaultContext
	case o.Context < 0:
		o.Context = 0
	}
	return o
}

// Replay runs a script read step by step on both sides (each reset with
// its Config) and checks that they agree under the pair's relation and
// that each matches every expected result the script states; a
// ReplayError lists every problem, not only the first. It never holds the
// whole script, nor all of its results, only a few chunks of them and what
// a report needs (the problems, and the steps the table shows). It returns
// how many steps it replayed. An error of steps (a script that fails to
// parse) is returned as it is, after the sides ran the steps before it.
func (p *Pair) Replay(ctx context.Context, steps StepReader, o ReplayOptions) (int, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	in, readErr := chunks(ctx, steps, o.Chunk)
	defer func() {
		cancel()
		_ = readErr() // steps is not read after Replay returns
	}()
	r := &replayed{pair: p, cmp: equiv.NewComparer(p.Relation), table: newTableKeeper(o.FullTable, o.Context), a: p.A.Name, b: p.B.Name}
	first, err := firstChunk(ctx, in, readErr)
	if err != nil {
		return 0, err
	}
	if first.last {
		// The whole script in one call per side, as the fuzzing loop
		// runs it.
		outA, outB, _, errA, errB := p.exec(ctx, [][]ops.Op{first.ops})
		if err := sideErrors(errA, errB); err != nil {
			return 0, err
		}
		if err := r.take(first, outA[0].Results, outB[0].Results); err != nil {
			return 0, err
		}
		return r.n, r.finish(outA[0].Snapshot, outB[0].Snapshot)
	}
	if err := p.resetBoth(ctx); err != nil {
		return 0, err
	}
	// A chunk's results are compared while the sides run the next one.
	type results struct {
		c      *chunk
		ra, rb []ops.Result
	}
	taken := make(chan results, 1)
	var takeErr error
	var comparing sync.WaitGroup
	comparing.Add(1)
	go func() {
		defer comparing.Done()
		for x := range taken {
			if takeErr == nil {
				takeErr = r.take(x.c, x.ra, x.rb)
			}
		}
	}()
	for c := first; c != nil; c = <-in {
		var ra, rb []ops.Result
		if ra, rb, err = p.applyChunk(ctx, c); err != nil {
			break
		}
		taken <- results{c, ra, rb}
	}
	close(taken)
	comparing.Wait()
	if err := errors.Join(err, takeErr); err != nil {
		return r.n, err
	}
	if err := readErr(); err != nil {
		return r.n, err
	}
	if err := ctx.Err(); err != nil {
		return r.n, err
	}
	sa, sb, err := p.snapshotBoth(ctx)
	if err != nil {
		return r.n, err
	}
	return r.n, r.finish(sa, sb)
}

// replayed is what a replay has found so far.
type replayed struct {
	pair         *Pair
	a, b         string
	n            int
	cmp          *equiv.Comparer
	div          *equiv.Divergence
	missA, missB []string
	table        *tableKeeper
}

// take compares one chunk's results.
func (r *replayed) take(c *chunk, ra, rb []ops.Result) error {
	if len(ra) != len(c.ops) || len(rb) != len(c.ops) {
		return fmt.Errorf("steps %d-%d: %d results from %s and %d from %s for %d operations", c.start+1, c.start+len(c.ops), len(ra), r.a, len(rb), r.b, len(c.ops))
	}
	marked := make([]bool, len(c.ops))
	for i, op := range c.ops {
		st := ops.Step{Op: op, Want: c.want[i]}
		if r.div == nil {
			if r.div = r.cmp.Step(st.Op, ra[i], rb[i]); r.div != nil {
				marked[i] = true
			}
		}
		if st.Want == nil {
			continue
		}
		if m := mismatch(c.start+i, st, r.a, ra[i]); m != "" {
			r.missA = append(r.missA, m)
			marked[i] = true
		}
		if m := mismatch(c.start+i, st, r.b, rb[i]); m != "" {
			r.missB = append(r.missB, m)
			marked[i] = true
		}
	}
	r.table.add(c, ra, rb, marked)
	r.n += len(c.ops)
	return nil
}

// finish compares the final states and gives the verdict.
func (r *replayed) finish(sa, sb ops.Snapshot) error {
	final := false
	if r.div == nil {
		if r.div = r.pair.broken(sa, sb, false); r.div == nil {
			r.div = r.cmp.Final(sa, sb)
		}
		final = r.div != nil
	}
	var problems []string
	if r.div != nil {
		problems = append(problems, "the implementations disagree at "+r.div.Error())
	}
	problems = append(problems, r.missA...)
	problems = append(problems, r.missB...)
	if len(problems) > 0 {
		return &ReplayError{Problems: problems, Table: r.table.table(r.a, r.b, final)}
	}
	return nil
}

// mismatch is the line Mismatches writes for step i when got is not the
// result the step states, or "".
func mismatch(i int, st ops.Step, name string, got ops.Result) string {
	if equiv.SameResult(st.Op, got, *st.Want) {
		return ""
	}
	return fmt.Sprintf("step %d (%s): %s returned %s, the script expects %s", i+1, ops.FormatOp(st.Op), name,
		ops.FormatResult(st.Op, got), ops.FormatResult(st.Op, *st.Want))
}
