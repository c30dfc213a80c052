package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// worker runs batches on one pair of sides.
type worker struct {
	o    Options
	pair Pair
}

// batchResult is what a worker made of one batch: every script it compared
// (in order), and what it found.
type batchResult struct {
	start, n int
	// compared[i] is the outcome pair of script start+i, or nil if it was
	// not compared (the run ended first, or a side failed on it).
	compared []*[2]ops.Outcome
	// same[i]: both sides sent script start+i's outcome as the same bytes,
	// so compared[i] holds one value twice and is equal under any
	// relation (nil: no side sent bytes).
	same     []bool
	failures []failure
	scripts  [][]ops.Op
	seeds    []uint64
}

// failure is a side that failed on one script.
type failure struct {
	index int // the script's index in the run
	side  Side
	err   error
	// alone: a fresh plugin, running this script and nothing else, failed
	// again.
	alone bool
	// isolated: false when the failure was seen only on the whole batch
	// (every script alone ran fine, or the run ended before one failed).
	isolated bool
}

// run executes one batch on the pair and compares what came back. When a
// side fails, it is restarted and the batch's scripts run one at a time, so
// that every script that can be compared is, and the one that fails is
// known.
func (w *worker) run(ctx context.Context, bt batch) *batchResult {
	br := &batchResult{start: bt.start, n: len(bt.scripts), compared: make([]*[2]ops.Outcome, len(bt.scripts)), scripts: bt.scripts, seeds: bt.seeds}
	outA, outB, same, errA, errB := execBatch(ctx, w.pair.A, w.pair.B, bt.scripts)
	if errA == nil && errB == nil {
		for i := range bt.scripts {
			br.compared[i] = &[2]ops.Outcome{outA[i], outB[i]}
		}
		br.same = same
		return br
	}
	if ended(ctx, errA) && ended(ctx, errB) {
		return br // the run ended, nothing failed: nothing of this batch counts
	}
	// Until a script shows it alone, the failure belongs to the batch; it
	// is kept so even if the run ends before the culprit is found.
	var batchFailures []failure
	for _, f := range []struct {
		side Side
		err  error
	}{{w.pair.A, errA}, {w.pair.B, errB}} {
		if f.err != nil && !ended(ctx, f.err) {
			batchFailures = append(batchFailures, failure{index: bt.start, side: f.side, err: f.err})
		}
	}
	if err := w.restart(ctx, errA, errB); err != nil {
		batchFailures[0].err = err
		br.failures = batchFailures[:1]
		return br
	}
	var located []failure
	for i, s := range bt.scripts {
		outA, outB, errA, errB := ExecBoth(ctx, w.pair.A, w.pair.B, [][]ops.Op{s})
		if ctx.Err() != nil {
			break
		}
		if errA == nil && errB == nil {
			br.compared[i] = &[2]ops.Outcome{outA[0], outB[0]}
			continue
		}
		located = append(located, w.isolate(ctx, bt.start+i, s, errA, errB)...)
	}
	if len(located) > 0 {
		br.failures = located
	} else {
		br.failures = batchFailures
	}
	return br
}

// ended reports whether err is only the run's context ending (its time is
// up, or it was interrupted), not a failure of the side.
func ended(ctx context.Context, err error) bool {
	return err == nil || (ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)))
}

// isolate restarts the side(s) that failed on one script and runs that
// script alone on the fresh plugin, to say honestly whether it reproduces
// on its own.
func (w *worker) isolate(ctx context.Context, index int, s []ops.Op, errA, errB error) []failure {
	var out []failure
	for _, f := range []struct {
		side Side
		err  error
	}{{w.pair.A, errA}, {w.pair.B, errB}} {
		if f.err == nil {
			continue
		}
		fl := failure{index: index, side: f.side, err: f.err, isolated: true}
		if err := restartSide(ctx, f.side); err != nil {
			fl.err = fmt.Errorf("%w; and it could not be restarted: %v", f.err, err)
			out = append(out, fl)
			continue
		}
		if _, err := execSide(ctx, f.side, [][]ops.Op{s}, nil); err != nil && ctx.Err() == nil {
			fl.alone = true
			if rerr := restartSide(ctx, f.side); rerr != nil {
				fl.err = fmt.Errorf("%w; and it could not be restarted: %v", f.err, rerr)
			}
		}
		out = append(out, fl)
	}
	return out
}

// restart replaces the sides that failed.
func (w *worker) restart(ctx context.Context, errA, errB error) error {
	var errs []error
	if errA != nil {
		errs = append(errs, wrapRestart(w.pair.A, errA, restartSide(ctx, w.pair.A)))
	}
	if errB != nil {
		errs = append(errs, wrapRestart(w.pair.B, errB, restartSide(ctx, w.pair.B)))
	}
	return errors.Join(errs...)
}

func (w *worker) failedSide(errA error) Side {
	if errA != nil {
		return w.pair.A
	}
	return w.pair.B
}

func wrapRestart(s Side, failed, restart error) error {
	if restart == nil {
		return nil
	}
	return fmt.Errorf("%s failed (%v) and could not be restarted: %w", s.Name, failed, restart)
}

func restartSide(ctx context.Context, s Side) error {
	r, ok := s.Impl.(Restarter)
	if !ok {
		return fmt.Errorf("%s cannot be restarted", s.Name)
	}
	return r.Restart(ctx)
}

// Oracle returns a shrink oracle: a candidate fails when A and B disagree on it.
func Oracle(a, b Side, rel equiv.Relation) func(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
	return func(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
		outA, outB, errA, errB := ExecBoth(ctx, a, b, cands)
		if err := errors.Join(errA, errB); err != nil {
			return nil, err
		}
		fails := make([]bool, len(cands))
		for i, c := range cands {
			fails[i] = equiv.Compare(rel, c, outA[i], outB[i]) != nil
		}
		return fails, nil
	}
}
