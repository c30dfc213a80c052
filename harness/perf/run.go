package perf

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/worst"
)

// RunOptions configure a run of drawn scripts: each script is cut into
// patterns (Cuts), each judged on the pair's sides (Options.A and B).
type RunOptions struct {
	Options
	// Pair is the sides, for the header and the result (names, infos,
	// relation, kernels, facts).
	Pair *runner.Pair
	// Generate draws script i from runner.ScriptSeed(Seed, i).
	Generate func(seed uint64) []ops.Op
	Seed     uint64
	// Checks bounds the scripts (0: none), Duration the time (0: none).
	Checks   int
	Duration time.Duration
	// KeepGoing records every signature instead of stopping at the first.
	KeepGoing bool
	// Corpus is where findings are written (Store).
	Corpus string
	// Header holds the run's header fields (Command, Version, Revision,
	// Engine, A and B as given); each finding's fills the rest.
	Header corpus.Header
	// Replay is the command that judges a finding again, FILE standing
	// for its path.
	Replay string
	// Report gets each finding as it is found; Notes what went wrong
	// without ending the run.
	Report, Notes io.Writer
}

// Result is what a run found: the runner's result (what the nightly
// shards read), with the performance findings as its findings.
type Result struct {
	*runner.Result
	Performance int     `json:"performance"`
	Patterns    int     `json:"patterns"`
	Threshold   float64 `json:"threshold"`
	Sizes       []int   `json:"sizes"`
	Metric      string  `json:"metric"`
}

// found is one signature a run found.
type found struct {
	runner.Finding
	f *Finding
}

// Run judges the patterns of drawn scripts until Checks scripts, Duration
// or (without KeepGoing) the first finding; a finding is minimised,
// measured, stored and reported, and a signature found again counts a
// hit. An ended context is not an error: the result says Interrupted.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	res := &Result{Result: runner.NewResult(o.Pair, o.Seed, o.Header.Engine), Threshold: o.Threshold, Sizes: o.Sizes, Metric: worst.MetricLabel(o.Metric)}
	start := time.Now()
	var deadline time.Time
	if o.Duration > 0 {
		deadline = start.Add(o.Duration)
	}
	seen := map[string]*found{}
	var order []*found
	stop := false
	for i := 0; !stop && (o.Checks == 0 || i < o.Checks) && (deadline.IsZero() || time.Now().Before(deadline)); i++ {
		var err error
		if stop, err = o.script(ctx, i, res, seen, &order); err != nil {
			return nil, err
		}
		if !res.Interrupted {
			res.Checks++
		}
	}
	for _, pf := range order {
		if pf.Hits > 1 && pf.Script != "" {
			pf.f.Hits = pf.Hits
			if err := corpus.WriteFileAtomic(pf.Script, []byte(Render(pf.f)), 0o644); err != nil && o.Notes != nil {
				fmt.Fprintf(o.Notes, "ipcfuzz: %v\n", err)
			}
		}
		res.Findings = append(res.Findings, pf.Finding)
		if pf.Script != "" {
			res.Scripts = append(res.Scripts, pf.Script)
		} else {
			res.Unstored++
		}
	}
	res.Performance = len(order)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	return res, nil
}

// script judges the patterns of script i and says whether the run stops.
func (o RunOptions) script(ctx context.Context, i int, res *Result, seen map[string]*found, order *[]*found) (bool, error) {
	seed := runner.ScriptSeed(o.Seed, i)
	for _, p := range Cuts(o.Pair.Subsystem, o.Generate(seed), o.Sizes[len(o.Sizes)-1]) {
		v, err := Judge(ctx, o.Options, p)
		if err != nil {
			res.Interrupted = ctx.Err() != nil
			return true, ignoreEnded(ctx, err)
		}
		res.Patterns++
		res.Ops += size(p)
		if !v.Slower {
			continue
		}
		sig := Signature(p)
		if pf, ok := seen[sig]; ok {
			pf.Hits++
			continue
		}
		pf, err := o.record(ctx, i, seed, v)
		if err != nil {
			res.Interrupted = ctx.Err() != nil
			return true, ignoreEnded(ctx, err)
		}
		seen[sig] = pf
		*order = append(*order, pf)
		if !o.KeepGoing {
			return true, nil
		}
	}
	return false, nil
}

// ignoreEnded is nil for an error of an ended context.
func ignoreEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// record minimises a verdict, measures its table, writes the finding and
// reports it (in full when it could not be written).
func (o RunOptions) record(ctx context.Context, index int, seed uint64, v Verdict) (*found, error) {
	v, removed, err := Minimize(ctx, o.Options, v)
	if err != nil {
		return nil, err
	}
	table, err := o.table(ctx, v.Pattern)
	if err != nil {
		return nil, err
	}
	sig := Signature(v.Pattern)
	f := &Finding{Verdict: v, Removed: removed, Table: table, Metric: worst.MetricLabel(o.Metric), Threshold: o.Threshold, Replay: o.Replay}
	f.Header = o.header(index, seed, sig)
	path, storeErr := Store(o.Corpus, f)
	if storeErr == nil {
		f.Replay = strings.Replace(f.Replay, "FILE", path, 1)
		storeErr = corpus.WriteFileAtomic(path, []byte(Render(f)), 0o644)
	}
	pf := &found{Finding: runner.Finding{Signature: sig, Kind: Kind, Script: path, Index: index, Ops: size(v.Pattern), Hits: 1}, f: f}
	if storeErr != nil {
		text := Render(f)
		pf.Text, pf.StoreError = text, storeErr.Error()
		fmt.Fprintf(o.Report, "ipcfuzz: the finding could not be stored (%v); here it is in full:\n%s", storeErr, text)
		return pf, nil
	}
	fmt.Fprintf(o.Report, "performance finding %s (script %d): %s\n%s\n%swritten: %s\n", sig, index, v, indent(ops.FormatPattern(v.Pattern)), table, path)
	return pf, nil
}

// table is complexity's table of the pattern on both sides.
func (o RunOptions) table(ctx context.Context, p ops.Pattern) (string, error) {
	metric, counter, reps := complexity.Counter, o.Metric, 1
	if o.Metric == worst.Wall {
		metric, counter, reps = complexity.Wall, "", o.Reps
	}
	rep, err := complexity.Run(ctx, []complexity.Subject{o.A, o.B}, ops.PatternWorkload(p), o.Sizes, reps, counter, nil)
	if err != nil {
		return "", fmt.Errorf("measuring the found pattern: %w", err)
	}
	var table strings.Builder
	if err := complexity.WriteTable(&table, rep, metric); err != nil {
		return "", err
	}
	return table.String(), nil
}

// header is a finding's header: the run's fields, the pair's, and the
// script's.
func (o RunOptions) header(index int, seed uint64, sig string) corpus.Header {
	h := o.Header
	p := o.Pair
	h.Kind, h.Format = Kind, 2
	h.Date = time.Now().UTC().Format(time.RFC3339)
	h.Seed, h.Index, h.ScriptSeed, h.HasSeed = o.Seed, index, seed, true
	h.Relation = string(p.Relation)
	h.AInfo = p.A.Info.Name + " " + p.A.Info.Version
	h.BInfo = p.B.Info.Name + " " + p.B.Info.Version
	h.Kernel, h.Facts, h.Signature, h.Hits = p.KernelRelease(), p.Facts().String(), sig, 1
	return h
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
