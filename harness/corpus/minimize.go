package corpus

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// MinimizeReport is what a minimization did, or would do.
type MinimizeReport struct {
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
	// KernelPCs: kernel program counters the kept scripts reached, on
	// the replayers that report them (a KCOV kernel side).
	KernelPCs int    `json:"kernel_pcs"`
	Out       string `json:"out"` // where the kept scripts were written ("" dry run)
}

// Replayer is an implementation a minimization replays scripts on.
type Replayer struct {
	Name       string
	Subsystems []string
	// Replay runs a script on a fresh instance (nothing carried over from
	// an earlier script).
	Replay func(*ops.Script) (ops.Outcome, error)
}

// Minimize replays every script of dir in size order (fewest operations
// first, then fewest bytes, then path) on each replayer that runs its
// subsystem, and keeps a script only if it adds a feature: a coverage
// unit of the models (when this binary is built with -cover and atomic
// counters), a kernel program counter (where a replayer is a kernel side
// with KCOV: ops.Observation.PCs) or an (operation, result class) pair. A script a replayer
// fails on is kept; an unparsable one, or one no replayer runs, is
// skipped. It only reports: CopyKept writes the kept scripts.
func Minimize(ctx context.Context, dir string, rs []Replayer) (*MinimizeReport, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus minimize: %w", err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	m := &minimizer{rs: rs, cov: newModelCoverage(), seen: map[string]bool{},
		rep: &MinimizeReport{Dir: dir, Impls: names, Coverage: "measured", Kept: []string{}, Dropped: []string{}, Failed: []string{}, Skipped: []string{}}}
	if !m.cov.ok() {
		m.rep.Coverage = m.cov.why
	}
	scripts := m.bySize(files)
	for _, s := range scripts {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("corpus minimize interrupted after %d of %d scripts: %w", len(m.rep.Kept)+len(m.rep.Dropped), len(scripts), ctx.Err())
		}
		if err := m.take(s); err != nil {
			return nil, err
		}
	}
	for f := range m.seen {
		switch {
		case strings.HasPrefix(f, "cov:"):
			m.rep.Units++
		case strings.HasPrefix(f, "kpc:"):
			m.rep.KernelPCs++
		default:
			m.rep.Pairs++
		}
	}
	return m.rep, nil
}

// minimizer holds one minimization's state.
type minimizer struct {
	rs   []Replayer
	cov  *modelCoverage
	seen map[string]bool
	rep  *MinimizeReport
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
		sc, err := Read(f)
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
		m.rep.Skipped = append(m.rep.Skipped, s.path+": no implementation of "+strings.Join(m.rep.Impls, ",")+" runs subsystem "+s.sc.Subsystem)
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
	for _, r := range m.rs {
		if !slices.Contains(r.Subsystems, sc.Subsystem) {
			continue
		}
		ran = true
		out, err := r.Replay(sc)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", r.Name, err)
		}
		feats = append(feats, resultPairs(sc, out)...)
		feats = append(feats, kernelPCs(out)...)
	}
	units, err := m.cov.units()
	if err != nil {
		return nil, ran, err
	}
	return append(feats, units...), ran, nil
}

// kernelPCs names the kernel program counters an outcome's operations
// reached.
func kernelPCs(out ops.Outcome) []string {
	var feats []string
	for _, ob := range out.Observed {
		for _, pc := range ob.PCs {
			feats = append(feats, fmt.Sprintf("kpc:%x", pc))
		}
	}
	return feats
}

// resultPairs names the (operation, result class) pairs of an outcome.
func resultPairs(sc *ops.Script, out ops.Outcome) []string {
	var feats []string
	for i, st := range sc.Steps {
		if i >= len(out.Results) {
			break
		}
		feats = append(feats, fmt.Sprintf("op:%s/%s/%s", sc.Subsystem, st.Op.Kind, out.Results[i].Class()))
	}
	return feats
}

// CheckEmptyOut refuses an --out directory that holds anything ("" is
// none: a dry run).
func CheckEmptyOut(out string) error {
	if out == "" {
		return nil
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty: minimize writes into an empty directory", out)
	}
	return nil
}

// CopyKept writes the kept files into out, under their paths relative to
// dir; dir is not touched.
func CopyKept(dir, out string, kept []string) error {
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

// WriteText prints the report for people: a summary line, then one line
// per kept, dropped, failed or skipped script.
func (r *MinimizeReport) WriteText(w io.Writer) {
	mode := "dry run: nothing written (--out DIR writes the kept scripts)"
	if r.Out != "" {
		mode = "kept scripts written to " + r.Out
	}
	fmt.Fprintf(w, "minimize %s on %s, smallest first: %d scripts, %d kept (%d coverage units, %d (op, result class) pairs), %d add nothing, %d failed (kept), %d skipped; %s\n",
		r.Dir, strings.Join(r.Impls, ","), r.Scripts, len(r.Kept), r.Units, r.Pairs, len(r.Dropped), len(r.Failed), len(r.Skipped), mode)
	fmt.Fprintf(w, "model coverage: %s\n", r.Coverage)
	if r.KernelPCs > 0 {
		fmt.Fprintf(w, "kernel coverage: %d program counters reached by the kept scripts\n", r.KernelPCs)
	}
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
