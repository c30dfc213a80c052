package runner

import (
	"time"

	"context"
	"errors"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// worker runs batches on one pair.
type worker struct {
	pair *Pair
	pace *pace // told how long each batch took
}

// batchResult is what a worker made of one batch: every script it compared
// (in order), and what it found.
type batchResult struct {
	start, n int
	// verdicts[i] is the verdict of script start+i, or nil if it was not
	// compared (the run ended first, or a side failed on it).
	verdicts []*Verdict
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
	br := &batchResult{start: bt.start, n: len(bt.scripts), verdicts: make([]*Verdict, len(bt.scripts)), scripts: bt.scripts, seeds: bt.seeds}
	began := time.Now()
	vs, err := w.pair.Check(ctx, bt.scripts)
	if err == nil {
		w.observe(bt.scripts, began)
	}
	if err == nil {
		for i := range vs {
			br.verdicts[i] = &vs[i]
		}
		return br
	}
	errA, errB := splitErrors(err)
	if ended(ctx, errA) && ended(ctx, errB) {
		return br // the run ended, nothing failed: nothing of this batch counts
	}
	// Until a script shows it alone, the failure belongs to the batch; it
	// is kept so even if the run ends before the culprit is found.
	var batchFailures []failure
	for _, f := range w.sides(errA, errB) {
		if !ended(ctx, f.err) {
			batchFailures = append(batchFailures, failure{index: bt.start, side: f.side, err: f.err})
		}
	}
	if err := w.pair.Restart(ctx, err); err != nil {
		batchFailures[0].err = err
		br.failures = batchFailures[:1]
		return br
	}
	var located []failure
	for i, s := range bt.scripts {
		began := time.Now()
		v, err := w.pair.CheckOne(ctx, s)
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			w.observe([][]ops.Op{s}, began)
			br.verdicts[i] = &v
			continue
		}
		located = append(located, w.isolate(ctx, bt.start+i, s, err)...)
	}
	if len(located) > 0 {
		br.failures = located
	} else {
		br.failures = batchFailures
	}
	return br
}

// observe tells the pace how long scripts took from began; the scripts
// one by one after a failure count too, so that a batch that outlasted the
// call timeout makes the next ones smaller.
func (w *worker) observe(scripts [][]ops.Op, began time.Time) {
	if w.pace != nil {
		w.pace.observe(scripts, time.Since(began))
	}
}

// sideFailure is one side and its error.
type sideFailure struct {
	side Side
	err  error
}

// sides pairs the sides that failed with their errors.
func (w *worker) sides(errA, errB error) []sideFailure {
	var out []sideFailure
	if errA != nil {
		out = append(out, sideFailure{w.pair.A, errA})
	}
	if errB != nil {
		out = append(out, sideFailure{w.pair.B, errB})
	}
	return out
}

// ended reports whether err is only the run's context ending (its time is
// up, or it was interrupted), not a failure of the side.
func ended(ctx context.Context, err error) bool {
	return err == nil || (ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)))
}

// isolate restarts the side(s) that failed on one script and runs that
// script alone on the fresh plugin, to say honestly whether it reproduces
// on its own.
func (w *worker) isolate(ctx context.Context, index int, s []ops.Op, err error) []failure {
	var out []failure
	for _, f := range w.sides(splitErrors(err)) {
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
