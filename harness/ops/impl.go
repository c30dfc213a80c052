package ops

import (
	"context"
	"fmt"
	"sync"
)

// Impl is an implementation as the runner sees it, whether it lives in this
// process (Local) or in a plugin process. Handles bound by Apply persist until
// the next Reset. Exec is the batched form the runner uses: for each script it
// resets with cfg, applies every operation and takes a snapshot, all in one
// call. A script too long to hold at once is run as Reset, Apply of one batch
// of its operations after the other, and Snapshot.
type Impl interface {
	Info(ctx context.Context) (Info, error)
	Reset(ctx context.Context, cfg Config) error
	Apply(ctx context.Context, ops []Op) ([]Result, error)
	Snapshot(ctx context.Context) (Snapshot, error)
	// ApplyFollowing is Apply for an implementation that follows
	// (Info.Follows): other holds the other implementation's results of
	// the same operations. It is what Exec's follow is for a script run in
	// batches; with other nil it is Apply.
	ApplyFollowing(ctx context.Context, ops []Op, other []Result) ([]Result, error)
	// SnapshotFollowing is Snapshot following the other implementation's
	// final snapshot; with other nil it is Snapshot.
	SnapshotFollowing(ctx context.Context, other *Snapshot) (Snapshot, error)
	// follow, when not nil, holds the other implementation's outcome of each
	// script, for an implementation that follows (Info.Follows).
	Exec(ctx context.Context, cfg Config, scripts [][]Op, follow []Outcome) ([]Outcome, error)
	// Measure runs a workload of size n, reps times, inside the implementation.
	Measure(ctx context.Context, cfg Config, w Workload, n, reps int) (Measurement, error)
	Close() error
}

// ScriptRunner is a Model that runs a whole script itself (reset, operations
// with handles resolved as Run does, snapshot), for instance to hand it to a
// worker thread in one go. Local.Exec prefers it to operation-by-operation calls.
type ScriptRunner interface {
	Run(cfg Config, script []Op) (Outcome, error)
}

// Local serves a Model in this process behind the Impl interface. It is what
// the plugin server wraps, and what tests and benchmarks use directly.
type Local struct {
	mu      sync.Mutex
	info    Info
	model   Model
	handles Handles
}

// NewLocal wraps m.
func NewLocal(info Info, m Model) *Local {
	return &Local{info: info, model: m, handles: Handles{}}
}

// Info implements Impl.
func (l *Local) Info(context.Context) (Info, error) { return l.info, nil }

// Reset implements Impl.
func (l *Local) Reset(_ context.Context, cfg Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handles = Handles{}
	return l.model.Reset(cfg)
}

// Apply implements Impl.
func (l *Local) Apply(ctx context.Context, batch []Op) ([]Result, error) {
	return l.ApplyFollowing(ctx, batch, nil)
}

// ApplyFollowing implements Impl: a model that is a Follower follows other
// (operation i follows other[i]) as RunFollowing does; any other model
// applies the operations as Apply does.
func (l *Local) ApplyFollowing(ctx context.Context, batch []Op, other []Result) ([]Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, follows := l.model.(Follower)
	follows = follows && other != nil
	out := make([]Result, 0, len(batch))
	for i, op := range batch {
		if i%256 == 0 && ctx.Err() != nil {
			return out, ctx.Err()
		}
		var r Result
		var err error
		if follows {
			var want *Result
			if i < len(other) {
				want = &other[i]
			}
			r, err = f.ApplyFollowing(l.handles.Resolve(op), want)
		} else {
			r, err = l.model.Apply(l.handles.Resolve(op))
		}
		if err != nil {
			return out, fmt.Errorf("op %d (%s): %w", i+1, FormatOp(op), err)
		}
		l.handles.Record(op, r)
		out = append(out, r)
	}
	return out, nil
}

// Snapshot implements Impl.
func (l *Local) Snapshot(ctx context.Context) (Snapshot, error) {
	return l.SnapshotFollowing(ctx, nil)
}

// SnapshotFollowing implements Impl: a model that is a Follower follows
// other, as RunFollowing does.
func (l *Local) SnapshotFollowing(_ context.Context, other *Snapshot) (Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.model.(Follower); ok && other != nil {
		return f.SnapshotFollowing(other)
	}
	return l.model.Snapshot()
}

// Exec implements Impl.
func (l *Local) Exec(ctx context.Context, cfg Config, scripts [][]Op, others []Outcome) ([]Outcome, error) {
	if others != nil && len(others) != len(scripts) {
		return nil, fmt.Errorf("%d outcomes to follow for %d scripts", len(others), len(scripts))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Outcome, 0, len(scripts))
	for i, s := range scripts {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var o Outcome
		var err error
		sr, runsScripts := l.model.(ScriptRunner)
		switch {
		case others != nil:
			o, err = RunFollowing(l.model, cfg, s, &others[i])
		case runsScripts:
			o, err = sr.Run(cfg, s)
		default:
			o, err = Run(l.model, cfg, s)
		}
		if err != nil {
			return out, fmt.Errorf("script %d of %d: %w", i+1, len(scripts), err)
		}
		out = append(out, o)
	}
	l.handles = Handles{}
	return out, nil
}

// Measure implements Impl: a Measurer measures itself; any other model runs
// the scripts of a plain workload (MeasureScripts).
func (l *Local) Measure(_ context.Context, cfg Config, w Workload, n, reps int) (Measurement, error) {
	if err := CheckMeasure(w, n, reps); err != nil {
		return Measurement{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handles = Handles{}
	if m, ok := l.model.(Measurer); ok {
		return m.Measure(cfg, w, n, reps)
	}
	return MeasureScripts(l.model, cfg, w, n, reps)
}

// Close implements Impl.
func (l *Local) Close() error { return l.model.Close() }
