package runner

import (
	"context"
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// wires returns both sides as ops.Wire when they speak one packed layout.
func wires(a, b Side) (wa, wb ops.Wire, ok bool) {
	wa, okA := a.Impl.(ops.Wire)
	wb, okB := b.Impl.(ops.Wire)
	return wa, wb, okA && okB && wa.Layout() == wb.Layout()
}

// execWire runs scripts on two sides of one packed layout, neither of
// which follows: the scripts are packed once for both, and an outcome
// both sides sent as the same bytes is decoded once (same[i]), but for
// its observations, which are each side's own.
// took receives how long each side's call took.
func execWire(ctx context.Context, a, b Side, wa, wb ops.Wire, scripts [][]ops.Op, took *[2]time.Duration) (outA, outB []ops.Outcome, same []bool, errA, errB error) {
	lens := make([]int, len(scripts))
	for i, s := range scripts {
		lens[i] = len(s)
	}
	packed := wa.PackScripts(scripts)
	var rawA, rawB []ops.WireOutcome
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		began := time.Now()
		rawB, errB = wb.ExecPacked(ctx, b.Config, packed, lens)
		took[1] = time.Since(began)
	}()
	began := time.Now()
	rawA, errA = wa.ExecPacked(ctx, a.Config, packed, lens)
	took[0] = time.Since(began)
	wg.Wait()
	if errA != nil || errB != nil {
		return nil, nil, nil, errA, errB
	}
	outA, outB, same = make([]ops.Outcome, len(scripts)), make([]ops.Outcome, len(scripts)), make([]bool, len(scripts))
	for i := range scripts {
		var ea, eb error
		outA[i], ea = wa.Decode(rawA[i], i, lens[i])
		if rawA[i].Same(rawB[i]) {
			// The same results and snapshot; the observations are B's
			// own (Same leaves them out).
			outB[i], same[i], eb = outA[i], true, ea
			if eb == nil {
				outB[i].Observed, eb = wb.DecodeObserved(rawB[i], i, lens[i])
			}
		} else {
			outB[i], eb = wb.Decode(rawB[i], i, lens[i])
		}
		if ea != nil || eb != nil {
			// Each side's error is the first of its own outcomes that does
			// not decode, as its Exec would have said.
			return nil, nil, nil, decodeAll(wa, rawA, lens), decodeAll(wb, rawB, lens)
		}
	}
	return outA, outB, same, nil, nil
}

// decodeAll returns the first error decoding raw, a side's outcomes.
func decodeAll(w ops.Wire, raw []ops.WireOutcome, lens []int) error {
	for i, r := range raw {
		if _, err := w.Decode(r, i, lens[i]); err != nil {
			return err
		}
	}
	return nil
}
