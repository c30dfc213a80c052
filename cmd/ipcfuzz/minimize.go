package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// minimizeReport is what corpus minimize did, or would do.
type minimizeReport struct {
	Dir      string   `json:"dir"`
	Impls    []string `json:"impls"`
	Coverage string   `json:"coverage"` // "measured", or why not
	Scripts  int      `json:"scripts"`
	Kept     []string `json:"kept"`
	Dropped  []string `json:"dropped"` // added no feature
	Failed   []string `json:"failed"`  // a model failed on it (kept: that is a feature too)
	Skipped  []string `json:"skipped"` // unparsable, or no implementation runs its subsystem
	Units    int      `json:"units"`   // coverage units reached by the kept scripts
	Pairs    int      `json:"pairs"`   // (op, result class) pairs of the kept scripts
	Out      string   `json:"out"`     // where the kept scripts were written ("" dry run)
}

// minimizeCmd is "ipcfuzz corpus minimize [DIR] [--out EMPTY]": it replays
// every script of DIR in size order (fewest operations first) on fresh
// in-process models, and keeps a script only if it adds a feature: a
// coverage unit of the models (when this ipcfuzz is built with -cover) or
// an (operation, result class) pair. Without --out it is a dry run that
// only reports; with --out it writes the kept scripts there, and DIR is
// never touched.
func minimizeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("corpus minimize", flag.ContinueOnError)
	out := fs.String("out", "", "write the kept scripts into this empty (or new) directory; without it, a dry run")
	implList := fs.String("impls", "naive,optimized", "built-in implementations replayed in-process")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"usage: ipcfuzz corpus minimize [DIR] [--out EMPTYDIR] [--impls A,B] [--json]"}
	}
	dir := "corpus"
	if len(pos) == 1 {
		dir = pos[0]
	}
	if err := checkEmptyOut(*out); err != nil {
		return err
	}
	rep, err := minimize(ctx, dir, strings.Split(*implList, ","))
	if err != nil {
		return err
	}
	if *out != "" {
		if err := copyKept(dir, *out, rep.Kept); err != nil {
			return err
		}
		rep.Out = *out
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	printMinimizeReport(stdout, rep)
	return nil
}

// checkEmptyOut refuses an --out directory that holds anything.
func checkEmptyOut(out string) error {
	if out == "" {
		return nil
	}
	entries, err := os.ReadDir(out)
	if err == nil && len(entries) > 0 {
		return usageError{fmt.Sprintf("--out %s is not empty: minimize writes into an empty directory", out)}
	}
	return nil
}

// minimizer holds one minimization's state.
type minimizer struct {
	impls []string
	cov   *modelCoverage
	seen  map[string]bool
	rep   *minimizeReport
}

func minimize(ctx context.Context, dir string, names []string) (*minimizeReport, error) {
	for _, n := range names {
		if _, err := impls.Lookup(n); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	files, err := corpus.Files(dir)
	if err != nil {
		return nil, inputError{fmt.Errorf("corpus minimize: %w", err)}
	}
	m := &minimizer{impls: names, cov: newModelCoverage(), seen: map[string]bool{},
		rep: &minimizeReport{Dir: dir, Impls: names, Coverage: "measured", Kept: []string{}, Dropped: []string{}, Failed: []string{}, Skipped: []string{}}}
	if !m.cov.ok() {
		m.rep.Coverage = m.cov.why
	}
	scripts := m.bySize(files)
	for _, s := range scripts {
		if ctx.Err() != nil {
			return nil, interruptedError{fmt.Sprintf("corpus minimize interrupted after %d of %d scripts", len(m.rep.Kept)+len(m.rep.Dropped), len(scripts))}
		}
		if err := m.take(s); err != nil {
			return nil, err
		}
	}
	for f := range m.seen {
		if strings.HasPrefix(f, "cov:") {
			m.rep.Units++
		} else {
			m.rep.Pairs++
		}
	}
	return m.rep, nil
}

// sized is a parsed script and its file.
type sized struct {
	path string
	sc   *ops.Script
	size int
}

// bySize parses the files and orders them by operations, then bytes,
// then path; unparsable ones are skipped and reported.
func (m *minimizer) bySize(files []string) []sized {
	var out []sized
	for _, f := range files {
		m.rep.Scripts++
		sc, err := corpus.Read(f)
		if err != nil {
			m.rep.Skipped = append(m.rep.Skipped, f+": "+firstLine(err.Error()))
			continue
		}
		out = append(out, sized{f, sc, len(ops.Format(sc))})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if len(a.sc.Steps) != len(b.sc.Steps) {
			return len(a.sc.Steps) < len(b.sc.Steps)
		}
		if a.size != b.size {
			return a.size < b.size
		}
		return a.path < b.path
	})
	return out
}

// take replays one script and keeps it if it adds a feature.
func (m *minimizer) take(s sized) error {
	feats, ran, err := m.features(s.sc)
	switch {
	case err != nil:
		m.rep.Failed = append(m.rep.Failed, s.path+": "+firstLine(err.Error()))
		m.rep.Kept = append(m.rep.Kept, s.path)
		return nil
	case !ran:
		m.rep.Skipped = append(m.rep.Skipped, s.path+": no implementation of "+strings.Join(m.impls, ",")+" runs subsystem "+s.sc.Subsystem)
		return nil
	}
	added := false
	for _, f := range feats {
		if !m.seen[f] {
			m.seen[f], added = true, true
		}
	}
	if added {
		m.rep.Kept = append(m.rep.Kept, s.path)
	} else {
		m.rep.Dropped = append(m.rep.Dropped, s.path)
	}
	return nil
}

// features replays a script on a fresh instance of each implementation
// that runs its subsystem and returns what it reached.
func (m *minimizer) features(sc *ops.Script) ([]string, bool, error) {
	if err := m.cov.reset(); err != nil {
		return nil, false, err
	}
	var feats []string
	ran := false
	for _, name := range m.impls {
		b, _ := impls.Lookup(name)
		if !slices.Contains(b.Subsystems(), sc.Subsystem) {
			continue
		}
		ran = true
		out, err := replayFresh(b, sc)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", name, err)
		}
		feats = append(feats, resultPairs(sc, out)...)
	}
	units, err := m.cov.units()
	if err != nil {
		return nil, ran, err
	}
	return append(feats, units...), ran, nil
}

// replayFresh runs a script on a new instance of a built-in.
func replayFresh(b impls.Builtin, sc *ops.Script) (ops.Outcome, error) {
	model, _, err := b.Start()
	if err != nil {
		return ops.Outcome{}, err
	}
	defer model.Close()
	return ops.Run(model, ops.Config{}, sc.Ops())
}

// resultPairs names the (operation, result class) pairs of an outcome.
func resultPairs(sc *ops.Script, out ops.Outcome) []string {
	var feats []string
	for i, st := range sc.Steps {
		if i >= len(out.Results) {
			break
		}
		feats = append(feats, fmt.Sprintf("op:%s/%s/%s", sc.Subsystem, st.Op.Kind, resultClass(out.Results[i])))
	}
	return feats
}

// resultClass is ok, blocked or the errno of a result.
func resultClass(r ops.Result) string {
	switch {
	case r.Err != ops.OK:
		return r.Err.String()
	case r.Blocked:
		return "blocked"
	}
	return "ok"
}

// copyKept writes the kept files into out, under their paths relative to dir.
func copyKept(dir, out string, kept []string) error {
	for _, f := range kept {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return fmt.Errorf("corpus minimize: %w", err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("corpus minimize: %w", err)
		}
		dst := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("corpus minimize: %w", err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("corpus minimize: %w", err)
		}
	}
	return nil
}

func printMinimizeReport(w io.Writer, r *minimizeReport) {
	mode := "dry run: nothing written (--out DIR writes the kept scripts)"
	if r.Out != "" {
		mode = "kept scripts written to " + r.Out
	}
	fmt.Fprintf(w, "minimize %s on %s, smallest first: %d scripts, %d kept (%d coverage units, %d (op, result class) pairs), %d add nothing, %d failed (kept), %d skipped; %s\n",
		r.Dir, strings.Join(r.Impls, ","), r.Scripts, len(r.Kept), r.Units, r.Pairs, len(r.Dropped), len(r.Failed), len(r.Skipped), mode)
	fmt.Fprintf(w, "model coverage: %s\n", r.Coverage)
	for _, f := range r.Kept {
		fmt.Fprintf(w, "keep  %s\n", f)
	}
	for _, f := range r.Dropped {
		fmt.Fprintf(w, "drop  %s\n", f)
	}
	for _, f := range append(r.Failed, r.Skipped...) {
		fmt.Fprintf(w, "note  %s\n", f)
	}
}
