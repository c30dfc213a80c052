package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// mergeCmd is "ipcfuzz corpus merge DIR... [--into corpus]": see
// corpus.Merge. It prints a report (or, with --json, the report object),
// writes a markdown summary with --summary, and exits 0 whatever it found:
// finding is the shards' business, merging is bookkeeping.
func mergeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("corpus merge", flag.ContinueOnError)
	into := fs.String("into", "corpus", "the corpus merged into (nothing in it is removed)")
	tries := fs.Int("tries", 3, "replays of each new script on its recorded pair")
	summary := fs.String("summary", "", "write a markdown summary to this file")
	date := fs.String("date", time.Now().UTC().Format("2006-01-02"), "today, for inputs that do not say when they ran")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	var sf sideFlags
	sf.register(fs, 60*time.Second)
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 || *tries < 1 {
		return usageError{"usage: ipcfuzz corpus merge DIR... [--into DIR] [--tries N] [--summary FILE.md] [--json]"}
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return inputError{fmt.Errorf("corpus merge: %s is not a directory", d)}
		}
	}
	chk := newReplayChecker(sf)
	defer chk.close()
	rep, err := corpus.Merge(ctx, corpus.MergeOptions{Into: *into, Inputs: dirs, Tries: *tries, Date: *date, Checker: chk})
	if err != nil {
		return err
	}
	if *summary != "" {
		if err := corpus.WriteFileAtomic(*summary, []byte(rep.Markdown()), 0o644); err != nil {
			return fmt.Errorf("corpus merge: %w", err)
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	printMergeReport(stdout, *into, rep)
	return nil
}

func printMergeReport(w io.Writer, into string, r *corpus.MergeReport) {
	fmt.Fprintf(w, "merged %d files into %s: %d added, %d already there, %d duplicates, %d larger than their signature's script, %d flaky (kept, marked); dropped %d not reproduced, %d stale, %d unparsable\n",
		r.Files, into, len(r.Added), r.Known, r.Duplicates, r.Larger, r.Flaky, r.NotReproduced, r.Stale, r.Unparsable)
	for _, s := range r.New {
		fmt.Fprintf(w, "new   %s: %d hits, %d ops, %s\n", s.Signature, s.Tonight, s.Ops, s.Script)
	}
	for _, s := range r.Again {
		fmt.Fprintf(w, "again %s: %d hits tonight, %d in all, first seen %s\n", s.Signature, s.Tonight, s.Hits, s.FirstSeen)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "drop  %s: %s\n", d.Path, d.Why)
	}
}

// replayChecker is the merge's view of this build: which scripts still
// fit it, and replays on their recorded pairs (plugin processes, opened
// once per implementation).
type replayChecker struct {
	sf    sideFlags
	sides map[string]runner.Side
}

func newReplayChecker(sf sideFlags) *replayChecker {
	return &replayChecker{sf: sf, sides: map[string]runner.Side{}}
}

func (r *replayChecker) close() {
	for _, s := range r.sides {
		s.Impl.Close()
	}
}

// Stale implements corpus.Checker.
func (r *replayChecker) Stale(c *corpus.Candidate) string {
	h := c.Header
	if !h.IsFinding() || h.A == "" || h.B == "" {
		return "no recorded pair to replay it on (not a finding file)"
	}
	sub, err := props.Lookup(c.Script.Subsystem)
	if err != nil {
		return err.Error()
	}
	rel, err := equiv.Parse(h.Relation)
	if err != nil || !slices.Contains(sub.Relations, rel) {
		return fmt.Sprintf("subsystem %s is not compared under %q", sub.Name, h.Relation)
	}
	for _, spec := range []string{h.A, h.B} {
		if why := unavailable(spec, sub.Name); why != "" {
			return why
		}
	}
	return ""
}

// unavailable says why spec cannot run subsystem sub here, or "".
func unavailable(spec, sub string) string {
	name, _, err := ops.ParseImplName(spec)
	if err != nil {
		return err.Error()
	}
	if strings.ContainsRune(name, '/') {
		if _, err := os.Stat(name); err != nil {
			return fmt.Sprintf("plugin %s is not here", name)
		}
		return ""
	}
	b, err := impls.Lookup(name)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(b.Subsystems(), sub) {
		return fmt.Sprintf("%s no longer runs subsystem %s", name, sub)
	}
	return ""
}

// side opens spec once.
func (r *replayChecker) side(ctx context.Context, spec string) (runner.Side, error) {
	if s, ok := r.sides[spec]; ok {
		return s, nil
	}
	s, _, err := r.sf.open(context.WithoutCancel(ctx), spec)
	if err != nil {
		return s, fmt.Errorf("opening %s: %w", spec, err)
	}
	r.sides[spec] = s
	return s, nil
}

// Reproduce implements corpus.Checker: a divergence reproduces when the
// pair diverges again (its signature is recomputed), a plugin failure when
// a side fails again.
func (r *replayChecker) Reproduce(ctx context.Context, c *corpus.Candidate, tries int) (corpus.Verdict, error) {
	v := corpus.Verdict{Tries: tries}
	a, err := r.side(ctx, c.Header.A)
	if err != nil {
		return v, err
	}
	b, err := r.side(ctx, c.Header.B)
	if err != nil {
		return v, err
	}
	p, err := runner.NewPair(ctx, a, b, c.Script.Subsystem, equiv.Relation(c.Header.Relation))
	if err != nil {
		return v, err
	}
	for range tries {
		if sig, ok := replayOnce(ctx, p, c); ok {
			v.Reproduced++
			v.Signature = sig
		}
	}
	return v, nil
}

// replayOnce runs a finding's script once on its pair and reports whether
// the finding showed again, with the divergence's signature. A side that
// failed is restarted for the next try.
func replayOnce(ctx context.Context, p *runner.Pair, c *corpus.Candidate) (string, bool) {
	script := c.Script.Ops()
	v, err := p.CheckOne(ctx, script)
	if err != nil {
		_ = p.Restart(context.WithoutCancel(ctx), err) // a side that cannot come back fails its next replay
	}
	failed := err != nil
	if c.Header.Kind == "plugin failure" || failed {
		return c.Header.Signature, failed && c.Header.Kind == "plugin failure"
	}
	if !v.Diverged() {
		return "", false
	}
	return p.Signature(script, v), true
}
