// Package runner runs the same scripts on two implementations in lockstep
// batches, compares every result and the final state under an equivalence,
// shrinks the first divergence to a minimal script and stores it in the
// corpus. A plugin that crashes, hangs or answers garbage is a finding too:
// the script that triggered it is stored and the run goes on with a fresh
// plugin.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/shrink"
)

// Side is one implementation under comparison.
type Side struct {
	Name   string // as the user wrote it, e.g. "naive:alloc=legacy"
	Impl   ops.Impl
	Config ops.Config // handed to every Reset
	// Follows is the implementation's Info.Follows: where an operation may
	// end in several allowed ways, it takes the other side's way. Such a
	// side runs after the other one.
	Follows bool
}

// Restarter is an Impl that can be replaced by a fresh instance after it
// failed (a plugin that crashed or hung).
type Restarter interface {
	Restart(ctx context.Context) error
}

// Options configure a run.
type Options struct {
	A, B      Side
	Subsystem string
	Relation  equiv.Relation
	// Generate returns the script for one seed. It must be deterministic.
	Generate func(seed uint64) []ops.Op
	Seed     uint64
	Checks   int           // scripts to run; 0 with Duration means "until the time is up"
	Duration time.Duration // stop after this long (0: no limit)
	Batch    int           // scripts per Exec call (default 256)
	Corpus   string        // directory for findings ("" stores nothing)
	Command  string        // the command line, recorded in findings
	Progress io.Writer     // progress lines (nil: none)
	Report   io.Writer     // divergence reports for humans (nil: none)
	// Stats counts the scripts that had a task blocked and later completed,
	// and those with a race (see ScriptStats).
	Stats bool
}

// Result summarizes a run.
type Result struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	Subsystem   string   `json:"subsystem"`
	Checks      int      `json:"checks"`
	Ops         int      `json:"ops"`
	Divergences int      `json:"divergences"`
	Failures    int      `json:"plugin_failures"`
	Seconds     float64  `json:"seconds"`
	OpsPerSec   float64  `json:"ops_per_sec"`
	Scripts     []string `json:"scripts"`
	// Stats is filled in when Options.Stats asks for it.
	Stats *Stats `json:"stats,omitempty"`
}

// Run compares A and B until Checks scripts have run, the time is up, a
// divergence is found or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Batch <= 0 {
		o.Batch = 256
	}
	res := &Result{A: o.A.Name, B: o.B.Name, Subsystem: o.Subsystem, Scripts: []string{}}
	if o.Stats {
		res.Stats = &Stats{}
	}
	start := time.Now()
	var deadline time.Time
	if o.Duration > 0 {
		deadline = start.Add(o.Duration)
	}
	lastProgress := start
	defer func() {
		res.Seconds = time.Since(start).Seconds()
		if res.Seconds > 0 {
			res.OpsPerSec = float64(res.Ops) / res.Seconds
		}
	}()
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	for bt := range generate(genCtx, o) {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		outA, outB, errA, errB := execBoth(ctx, o.A, o.B, bt.scripts)
		if errA != nil || errB != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if err := pluginFailure(ctx, o, res, bt.scripts, bt.seeds, errA, errB); err != nil {
				return res, err
			}
			res.Checks += len(bt.scripts)
			continue
		}
		for i, s := range bt.scripts {
			res.Checks++
			res.Ops += len(s)
			if res.Stats != nil {
				res.Stats.add(s, outA[i], outB[i])
			}
			if d := equiv.Compare(o.Relation, s, outA[i], outB[i]); d != nil {
				res.Divergences++
				if err := divergence(ctx, o, res, s, bt.seeds[i], d); err != nil {
					return res, err
				}
				return res, nil
			}
		}
		if o.Progress != nil && time.Since(lastProgress) >= 2*time.Second {
			lastProgress = time.Now()
			el := time.Since(start).Seconds()
			fmt.Fprintf(o.Progress, "ipcfuzz: %d checks, %d ops, %.0f checks/s, %.0f ops/s, %d divergences, %d plugin failures\n",
				res.Checks, res.Ops, float64(res.Checks)/el, float64(res.Ops)/el, res.Divergences, res.Failures)
		}
	}
	return res, nil
}

// ScriptSeed is the seed of script i of a run with seed seed: a splitmix64
// mix, so that runs with nearby seeds draw unrelated scripts.
func ScriptSeed(seed uint64, i int) uint64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// batch is a run of consecutive scripts and their seeds.
type batch struct {
	seeds   []uint64
	scripts [][]ops.Op
}

// generate draws batches ahead of the plugins, so that drawing the next
// batch overlaps running the current one. Script i always has seed Seed+i.
func generate(ctx context.Context, o Options) <-chan batch {
	ch := make(chan batch, 1)
	go func() {
		defer close(ch)
		for next := 0; o.Checks <= 0 || next < o.Checks; {
			n := o.Batch
			if o.Checks > 0 {
				n = min(n, o.Checks-next)
			}
			bt := batch{seeds: make([]uint64, n), scripts: make([][]ops.Op, n)}
			for i := range n {
				bt.seeds[i] = ScriptSeed(o.Seed, next+i)
				bt.scripts[i] = o.Generate(bt.seeds[i])
			}
			next += n
			select {
			case ch <- bt:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// execBoth runs the scripts on both sides: at once, or, when one side
// follows, the other first and then the follower with its outcomes.
func execBoth(ctx context.Context, a, b Side, scripts [][]ops.Op) (outA, outB []ops.Outcome, errA, errB error) {
	switch {
	case b.Follows:
		outA, errA = a.Impl.Exec(ctx, a.Config, scripts)
		if errA == nil && len(outA) != len(scripts) {
			errA = fmt.Errorf("%s returned %d outcomes for %d scripts", a.Name, len(outA), len(scripts))
		}
		if errA != nil {
			return outA, nil, errA, nil
		}
		outB, errB = b.Impl.ExecFollowing(ctx, b.Config, scripts, outA)
		if errB == nil && len(outB) != len(scripts) {
			errB = fmt.Errorf("%s returned %d outcomes for %d scripts", b.Name, len(outB), len(scripts))
		}
		return outA, outB, errA, errB
	case a.Follows:
		outB, outA, errB, errA = execBoth(ctx, b, a, scripts)
		return outA, outB, errA, errB
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		outB, errB = b.Impl.Exec(ctx, b.Config, scripts)
		if errB == nil && len(outB) != len(scripts) {
			errB = fmt.Errorf("%s returned %d outcomes for %d scripts", b.Name, len(outB), len(scripts))
		}
	}()
	outA, errA = a.Impl.Exec(ctx, a.Config, scripts)
	if errA == nil && len(outA) != len(scripts) {
		errA = fmt.Errorf("%s returned %d outcomes for %d scripts", a.Name, len(outA), len(scripts))
	}
	wg.Wait()
	return outA, outB, errA, errB
}

// Oracle returns a shrink oracle: a candidate fails when A and B disagree on it.
func Oracle(a, b Side, rel equiv.Relation) shrink.Oracle {
	return func(ctx context.Context, cands [][]ops.Op) ([]bool, error) {
		outA, outB, errA, errB := execBoth(ctx, a, b, cands)
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

// divergence shrinks a diverging script, reports it and stores it. A
// divergence that does not reproduce is stored too, unshrunk, as flaky: a
// flaky verdict is a bug of one side (or of the harness), never noise.
func divergence(ctx context.Context, o Options, res *Result, script []ops.Op, seed uint64, first *equiv.Divergence) error {
	min, err := shrink.Minimize(ctx, script, Oracle(o.A, o.B, o.Relation))
	if err != nil {
		min = script // keep the unshrunk script rather than lose the finding
	}
	outs, errA, errB := execOne(ctx, o, min)
	if errA != nil || errB != nil {
		return fmt.Errorf("re-running the shrunk divergence: %w", errors.Join(errA, errB))
	}
	d := equiv.Compare(o.Relation, min, outs[0], outs[1])
	note := fmt.Sprintf("script seed %d, relation %s, shrunk from %d to %d ops", seed, o.Relation, len(script), len(min))
	if d == nil {
		min, d = script, first
		note = fmt.Sprintf("script seed %d, relation %s: FLAKY, the divergence did not reproduce when run again; kept unshrunk with the results of a re-run", seed, o.Relation)
		if outs, errA, errB = execOne(ctx, o, min); errA != nil || errB != nil {
			return fmt.Errorf("re-running a flaky divergence: %w", errors.Join(errA, errB))
		}
	}
	sc := ops.NewScript(o.Subsystem, min)
	f := corpus.Finding{
		Kind:    "divergence",
		Command: o.Command,
		Notes: []string{
			note,
			d.Error(),
		},
		A: corpus.Side{Name: o.A.Name, Results: outs[0].Results},
		B: corpus.Side{Name: o.B.Name, Results: outs[1].Results},
	}
	if d.Step < 0 {
		f.Notes = append(f.Notes, "final state of A:")
		f.Notes = append(f.Notes, strings.Split(strings.TrimSpace(ops.FormatSnapshot(outs[0].Snapshot)), "\n")...)
		f.Notes = append(f.Notes, "final state of B:")
		f.Notes = append(f.Notes, strings.Split(strings.TrimSpace(ops.FormatSnapshot(outs[1].Snapshot)), "\n")...)
	}
	return record(o, res, sc, f)
}

func record(o Options, res *Result, sc *ops.Script, f corpus.Finding) error {
	if o.Corpus != "" {
		path, err := corpus.Write(o.Corpus, sc, f)
		if err != nil {
			return err
		}
		res.Scripts = append(res.Scripts, path)
	}
	if o.Report != nil {
		fmt.Fprint(o.Report, corpus.Render(sc, f))
		if len(res.Scripts) > 0 {
			fmt.Fprintf(o.Report, "# written to %s\n", res.Scripts[len(res.Scripts)-1])
		}
	}
	return nil
}

func execOne(ctx context.Context, o Options, script []ops.Op) ([2]ops.Outcome, error, error) {
	outA, outB, errA, errB := execBoth(ctx, o.A, o.B, [][]ops.Op{script})
	var outs [2]ops.Outcome
	if errA == nil {
		outs[0] = outA[0]
	}
	if errB == nil {
		outs[1] = outB[0]
	}
	return outs, errA, errB
}

// pluginFailure handles a batch on which a side failed (crashed, hung,
// answered garbage): it restarts the failed sides, looks for the script that
// triggers the failure on its own, and records it.
func pluginFailure(ctx context.Context, o Options, res *Result, scripts [][]ops.Op, seeds []uint64, errA, errB error) error {
	res.Failures++
	failed := []struct {
		side Side
		err  error
	}{{o.A, errA}, {o.B, errB}}
	for _, f := range failed {
		if f.err == nil {
			continue
		}
		r, ok := f.side.Impl.(Restarter)
		if !ok {
			return fmt.Errorf("%s failed: %w", f.side.Name, f.err)
		}
		if err := r.Restart(ctx); err != nil {
			return fmt.Errorf("%s failed (%v) and could not be restarted: %w", f.side.Name, f.err, err)
		}
		culprit := -1
		for i, s := range scripts {
			if _, execErr := f.side.Impl.Exec(ctx, f.side.Config, [][]ops.Op{s}); execErr != nil {
				culprit = i
				if err := r.Restart(ctx); err != nil {
					return fmt.Errorf("%s failed again (%v) and could not be restarted: %w", f.side.Name, execErr, err)
				}
				break
			}
		}
		notes := []string{fmt.Sprintf("%s: %v", f.side.Name, f.err)}
		var sc *ops.Script
		if culprit >= 0 {
			notes = append(notes, fmt.Sprintf("the script of seed %d reproduces it on its own", seeds[culprit]))
			sc = ops.NewScript(o.Subsystem, scripts[culprit])
		} else {
			notes = append(notes, fmt.Sprintf("no single script of that batch of %d reproduces it (killed from outside, or it needs the whole batch); the first is kept", len(seeds)))
			sc = ops.NewScript(o.Subsystem, scripts[0])
		}
		if err := record(o, res, sc, corpus.Finding{Kind: "plugin failure", Command: o.Command, Notes: notes}); err != nil {
			return err
		}
	}
	return nil
}
