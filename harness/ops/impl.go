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
	// Apply applies a batch of operations in order. follow, when not nil,
	// holds the other implementation's results of the same operations
	// (result i for operation i), for an implementation that follows
	// (Info.Follows): it is what Exec's follow is for a script run in
	// batches. nil: nothing to follow.
	Apply(ctx context.Context, ops []Op, follow []Result) ([]Result, error)
	// Snapshot returns the whole observable state; follow, when not nil,
	// is the other implementation's final snapshot, to follow likewise.
	Snapshot(ctx context.Context, follow *Snapshot) (Snapshot, error)
	// follow, when not nil, holds the other implementation's outcome of each
	// script, for an implementation that follows (Info.Follows). Each
	// outcome carries the observations cfg.Observe asks for.
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

// Apply implements Impl: a model that is a Follower follows follow
// (operation i follows follow[i]) as RunFollowing does; any other model,
// or any model with follow nil, applies the operations as Run does.
func (l *Local) Apply(ctx context.Context, batch []Op, follow []Result) ([]Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := stepper{Model: Following(l.model), Handles: l.handles}
	out, err := st.Steps(ctx, batch, follow, follow != nil)
	return out.Results, err
}

// Snapshot implements Impl: a model that is a Follower follows follow,
// as RunFollowing does.
func (l *Local) Snapshot(_ context.Context, follow *Snapshot) (Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if follow != nil {
		return Following(l.model).SnapshotFollowing(follow)
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
