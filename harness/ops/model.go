package ops

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Config is what Reset hands an implementation: its options
// ("alloc=legacy"; unknown options must be refused, not ignored, see
// OptionSpecs) and the machine facts the other side of a pair reported.
type Config struct {
	Options map[string]string
	// Facts are the other side's facts (Info.Facts): a model answers as
	// that machine does where an answer depends on the machine. A side
	// that does not model a fact ignores it.
	Facts Facts
	// Observe asks for observations of each operation beside its result
	// (Outcome.Observed); Exec honours it, Reset, Apply and Measure
	// ignore it. It is not an option of the implementation: String
	// leaves it out.
	Observe Observing
}

// String writes the options in a stable order, "k=v,k=v".
func (c Config) String() string {
	keys := make([]string, 0, len(c.Options))
	for k := range c.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c.Options[k]
	}
	return strings.Join(parts, ",")
}

// ParseImplName splits "naive:alloc=legacy,x=y" into the name and its
// options. An option with no value ("kernel:image=", what
// kernel:image=$UNSET expands to) is refused, never read as a default: it
// would compare another implementation than the one the user named.
func ParseImplName(spec string) (string, Config, error) {
	name, opts, _ := strings.Cut(spec, ":")
	cfg := Config{Options: map[string]string{}}
	if name == "" {
		return "", cfg, fmt.Errorf("implementation %q: empty name", spec)
	}
	if opts == "" {
		return name, cfg, nil
	}
	for _, kv := range strings.Split(opts, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", cfg, fmt.Errorf("implementation %q: option %q is not key=value", spec, kv)
		}
		if v == "" {
			return "", cfg, fmt.Errorf("implementation %q: option %s= has no value (an unset variable?)", spec, k)
		}
		cfg.Options[k] = v
	}
	return name, cfg, nil
}

// Info describes an implementation.
type Info struct {
	Name       string
	Version    string
	Subsystems []string
	ExactIDs   bool // predicts the kernel's ids exactly (not just up to renaming)
	Blocking   bool // supports tasks that block
	Counters   bool // counts its own work for the complexity engine
	// Follows: where an operation may end in several allowed ways (woken
	// tasks racing), the implementation can follow the other side's way.
	Follows bool
	// Facts are answers of this machine that an implementation's results
	// depend on (see Fact), reported so that the other side can be
	// configured with them instead of diverging.
	Facts Facts
	// Notes say what it cannot do here and why (a part that did not
	// start), one line each, for the user.
	Notes []string
}

// Model is one implementation driven operation by operation. Handles are
// already resolved when Apply is called: op.Obj.Handle is 0 and op.Obj.ID is
// the id to use. Apply returns an error only when the implementation itself
// fails (never for an errno the operation legitimately returns).
type Model interface {
	Reset(cfg Config) error
	Apply(op Op) (Result, error)
	Snapshot() (Snapshot, error)
	Close() error
}

// Outcome is what one script did on one implementation.
type Outcome struct {
	Results  []Result
	Snapshot Snapshot
	// Observed holds an Observation per operation (Observed[i] of
	// operation i) when the run asked for any (Config.Observe), nil
	// otherwise; an implementation that observes nothing leaves it nil.
	// It is the side channel: never compared, never part of equality.
	Observed []Observation
}

// Follower is a Model whose operations may end in several allowed ways
// (woken tasks racing for a lock). Given the other implementation's result of
// an operation (or its final snapshot), it takes that way when it is one of
// its allowed ways, and its own first way otherwise; other is nil when there
// is nothing to follow. It is a Model's optional part: Following defaults
// it, once, for a model without it.
type Follower interface {
	ApplyFollowing(op Op, other *Result) (Result, error)
	SnapshotFollowing(other *Snapshot) (Snapshot, error)
}

// Following returns m as a Follower: m itself when it is one, else m with
// following defaulted (it has one way: it applies and snapshots as Model
// does, whatever the other side did).
func Following(m Model) Follower {
	if f, ok := m.(Follower); ok {
		return f
	}
	return oneWay{m}
}

type oneWay struct{ Model }

func (o oneWay) ApplyFollowing(op Op, _ *Result) (Result, error) { return o.Apply(op) }
func (o oneWay) SnapshotFollowing(*Snapshot) (Snapshot, error)   { return o.Snapshot() }

// Run resets m with cfg, applies every operation (resolving handles) and takes
// the final snapshot, observing each operation as cfg.Observe asks.
func Run(m Model, cfg Config, script []Op) (Outcome, error) {
	return RunFollowing(m, cfg, script, nil)
}

// RunFollowing is Run for a model that follows other (the other
// implementation's outcome of the same script) where it is a Follower.
func RunFollowing(m Model, cfg Config, script []Op, other *Outcome) (Outcome, error) {
	if err := m.Reset(cfg); err != nil {
		return Outcome{}, fmt.Errorf("reset: %w", err)
	}
	f := Following(m)
	st := stepper{Model: f, Observe: cfg.Observe}
	var want []Result
	if other != nil {
		want = other.Results
	}
	out, err := st.Steps(context.Background(), script, want, other != nil)
	if err != nil {
		return out, err
	}
	var snapOther *Snapshot
	if other != nil {
		snapOther = &other.Snapshot
	}
	if out.Snapshot, err = f.SnapshotFollowing(snapOther); err != nil {
		return out, fmt.Errorf("snapshot: %w", err)
	}
	return out, nil
}

// stepper applies operations on a model one after the other: it resolves
// and records handles (across calls), follows the other side's results
// where asked, and observes each operation as Observe asks, timing the
// model's own call alone.
type stepper struct {
	Model   Follower
	Observe Observing
	Handles Handles // nil: a fresh set, made by the first Steps
}

// Steps applies script; with follow set, operation i follows other[i] (an
// operation past the end of other follows nothing). It returns the
// results (and observations) of the operations up to the first that
// failed, with its error; ctx is checked every 256 operations.
func (s *stepper) Steps(ctx context.Context, script []Op, other []Result, follow bool) (Outcome, error) {
	if s.Handles == nil {
		s.Handles = Handles{}
	}
	out := Outcome{Results: make([]Result, 0, len(script))}
	if s.Observe.Any() {
		out.Observed = make([]Observation, 0, len(script))
	}
	for i, op := range script {
		if i%256 == 0 && ctx.Err() != nil {
			return out, ctx.Err()
		}
		var want *Result
		if follow && i < len(other) {
			want = &other[i]
		}
		r, obs, err := s.step(s.Handles.Resolve(op), want)
		if err != nil {
			return out, fmt.Errorf("op %d (%s): %w", i+1, FormatOp(op), err)
		}
		s.Handles.Record(op, r)
		out.Results = append(out.Results, r)
		if s.Observe.Any() {
			out.Observed = append(out.Observed, obs)
		}
	}
	return out, nil
}

// step applies one resolved operation, timed when Observe.Time asks (and
// only then is the clock read).
func (s *stepper) step(op Op, want *Result) (Result, Observation, error) {
	if !s.Observe.Time {
		r, err := s.Model.ApplyFollowing(op, want)
		return r, Observation{}, err
	}
	start := time.Now()
	r, err := s.Model.ApplyFollowing(op, want)
	return r, Observation{Nanos: time.Since(start).Nanoseconds()}, err
}
