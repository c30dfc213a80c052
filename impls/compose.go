package impls

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Part is one domain model of a composed implementation: the subsystems
// whose operations it runs (the kinds' subsystems: "ids", "tasks", "shm",
// "msg", "sem"; or "vma"), the model, and the options its Reset takes.
type Part struct {
	Subsystems []string
	Model      ops.Model
	Options    ops.OptionSpecs
}

// FactReporter is a part that reports machine facts (the kernel's).
type FactReporter interface {
	Facts() ops.Facts
}

// Composed is an implementation made of parts: each operation goes to the
// part that holds its kind's subsystem, Reset resets every part, and a
// snapshot is the parts' snapshots merged (each part fills only its own
// groups). Following and measuring are delegated to the part concerned.
type Composed struct {
	parts []Part
}

// Compose returns the implementation made of parts.
func Compose(parts ...Part) *Composed { return &Composed{parts: parts} }

var (
	_ ops.Follower     = (*Composed)(nil)
	_ ops.Measurer     = (*Composed)(nil)
	_ ops.ScriptRunner = (*Composed)(nil)
)

// part returns the part that runs subsystem sub.
func (c *Composed) part(sub string) (ops.Model, error) {
	for _, p := range c.parts {
		if slices.Contains(p.Subsystems, sub) {
			return p.Model, nil
		}
	}
	return nil, fmt.Errorf("no part runs the %s subsystem", sub)
}

func (c *Composed) partOf(op ops.Op) (ops.Model, error) {
	s := ops.Spec(op.Kind)
	if s == nil {
		return nil, fmt.Errorf("unknown operation kind %d", op.Kind)
	}
	return c.part(s.Subsystem)
}

// Reset implements ops.Model: each part gets the options it takes and
// every machine fact. An option no part takes is refused.
func (c *Composed) Reset(cfg ops.Config) error {
	if _, err := c.Options().Parse(cfg.Options); err != nil {
		return err
	}
	for _, p := range c.parts {
		if err := p.Model.Reset(p.config(cfg)); err != nil {
			return err
		}
	}
	return nil
}

// Options are the options the parts take, each once.
func (c *Composed) Options() ops.OptionSpecs {
	var out ops.OptionSpecs
	for _, p := range c.parts {
		out = out.With(p.Options)
	}
	return out
}

// config is the part of cfg a part takes: its own options, every fact,
// and the observations asked for.
func (p Part) config(cfg ops.Config) ops.Config {
	cfg.Options = p.Options.Only(cfg.Options)
	return cfg
}

// Describe is base (the name, version, ExactIDs and Counters the
// implementation declares) with what the parts make of it: the script
// subsystems they run, whether tasks block (a part runs the tasks kinds),
// whether it follows (a part is an ops.Follower), and the machine facts
// they report. Each of these has this one source.
func (c *Composed) Describe(base ops.Info) ops.Info {
	info := base
	var kinds []string
	info.Facts = ops.Facts{}
	for _, p := range c.parts {
		kinds = append(kinds, p.Subsystems...)
		_, follows := p.Model.(ops.Follower)
		info.Follows = info.Follows || follows
		info.Blocking = info.Blocking || slices.Contains(p.Subsystems, "tasks")
		if r, ok := p.Model.(FactReporter); ok {
			info.Facts = info.Facts.Over(r.Facts())
		}
	}
	info.Subsystems = ops.CoveredBy(kinds)
	return info
}                                                       // Apply implements ops.Model.
func (c *Composed) Apply(op ops.Op) (ops.Result, error) { return c.ApplyFollowing(op, nil) }

// ApplyFollowing implements ops.Follower.
func (c *Composed) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	m, err := c.partOf(op)
	if err != nil {
		return ops.Result{}, err
	}
	return ops.Following(m).ApplyFollowing(op, other)
}

// Snapshot implements ops.Model.
func (c *Composed) Snapshot() (ops.Snapshot, error) { return c.SnapshotFollowing(nil) }

// SnapshotFollowing implements ops.Follower.
func (c *Composed) SnapshotFollowing(other *ops.Snapshot) (ops.Snapshot, error) {
	var out ops.Snapshot
	for _, p := range c.parts {
		s, err := ops.Following(p.Model).SnapshotFollowing(other)
		if err != nil {
			return out, err
		}
		merge(&out, s)
	}
	return out, nil
}

// merge copies the fields s fills into out: the parts fill disjoint groups.
func merge(out *ops.Snapshot, s ops.Snapshot) {
	dst, src := reflect.ValueOf(out).Elem(), reflect.ValueOf(s)
	for i := range src.NumField() {
		if !src.Field(i).IsZero() {
			dst.Field(i).Set(src.Field(i))
		}
	}
}

// Run implements ops.ScriptRunner: a script that only one part's
// operations make up runs on that part alone (through its own fast path
// when it has one), and no other part is reset.
func (c *Composed) Run(cfg ops.Config, script []ops.Op) (ops.Outcome, error) {
	subs := ops.SubsystemsOf(script)
	var only *Part
	for i, p := range c.parts {
		uses := false
		for s := range subs {
			uses = uses || slices.Contains(p.Subsystems, s)
		}
		if !uses {
			continue
		}
		if only != nil {
			return ops.Run(c, cfg, script)
		}
		only = &c.parts[i]
	}
	if only == nil {
		return ops.Run(c, cfg, script)
	}
	if _, err := c.Options().Parse(cfg.Options); err != nil {
		return ops.Outcome{}, fmt.Errorf("reset: %w", err)
	}
	if sr, ok := only.Model.(ops.ScriptRunner); ok {
		return sr.Run(only.config(cfg), script)
	}
	return ops.Run(only.Model, only.config(cfg), script)
}

// Measure implements ops.Measurer: the part that runs the workload's
// subsystem measures it.
func (c *Composed) Measure(cfg ops.Config, w ops.Workload, n, reps int) (ops.Measurement, error) {
	m, err := c.part(ops.WorkloadSubsystem(w))
	if err != nil {
		return ops.Measurement{}, err
	}
	ms, ok := m.(ops.Measurer)
	if !ok {
		return ops.Measurement{}, fmt.Errorf("the part that runs %s does not measure workloads", ops.WorkloadSubsystem(w))
	}
	return ms.Measure(cfg, w, n, reps)
}

// Close implements ops.Model.
func (c *Composed) Close() error {
	var errs []error
	for _, p := range c.parts {
		errs = append(errs, p.Model.Close())
	}
	return errors.Join(errs...)
}
