package ops

import (
	"fmt"
	"sort"
	"strings"
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
// is nothing to follow.
type Follower interface {
	ApplyFollowing(op Op, other *Result) (Result, error)
	SnapshotFollowing(other *Snapshot) (Snapshot, error)
}

// Run resets m with cfg, applies every operation (resolving handles) and takes
// the final snapshot.
func Run(m Model, cfg Config, script []Op) (Outcome, error) {
	return RunFollowing(m, cfg, script, nil)
}

// RunFollowing is Run for a model that follows other (the other
// implementation's outcome of the same script) where it is a Follower.
func RunFollowing(m Model, cfg Config, script []Op, other *Outcome) (Outcome, error) {
	f, follows := m.(Follower)
	if !follows || other == nil {
		return run(m, cfg, script)
	}
	if err := m.Reset(cfg); err != nil {
		return Outcome{}, fmt.Errorf("reset: %w", err)
	}
	out := Outcome{Results: make([]Result, 0, len(script))}
	h := Handles{}
	for i, op := range script {
		var want *Result
		if i < len(other.Results) {
			want = &other.Results[i]
		}
		r, err := f.ApplyFollowing(h.Resolve(op), want)
		if err != nil {
			return out, fmt.Errorf("op %d (%s): %w", i+1, FormatOp(op), err)
		}
		h.Record(op, r)
		out.Results = append(out.Results, r)
	}
	snap, err := f.SnapshotFollowing(&other.Snapshot)
	if err != nil {
		return out, fmt.Errorf("snapshot: %w", err)
	}
	out.Snapshot = snap
	return out, nil
}

func run(m Model, cfg Config, script []Op) (Outcome, error) {
	if err := m.Reset(cfg); err != nil {
		return Outcome{}, fmt.Errorf("reset: %w", err)
	}
	out := Outcome{Results: make([]Result, 0, len(script))}
	h := Handles{}
	for i, op := range script {
		r, err := m.Apply(h.Resolve(op))
		if err != nil {
			return out, fmt.Errorf("op %d (%s): %w", i+1, FormatOp(op), err)
		}
		h.Record(op, r)
		out.Results = append(out.Results, r)
	}
	snap, err := m.Snapshot()
	if err != nil {
		return out, fmt.Errorf("snapshot: %w", err)
	}
	out.Snapshot = snap
	return out, nil
}
