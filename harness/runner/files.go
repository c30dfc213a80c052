package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// FilesReplay is a replay of script files, in turn, on two sides: what
// ipcfuzz replay runs.
type FilesReplay struct {
	// Files are the scripts, and Subsystems the subsystem of each
	// (CheckScript).
	Files, Subsystems []string
	Sides             [2]Side
	Relation          equiv.Relation
	// Pair is the pair of the sides that replays the scripts of a
	// subsystem.
	Pair func(subsystem string) (*Pair, error)
	// Sink is told of the start, of each file's verdict and of the end.
	Sink Sink
	// Observe, when it asks for something (kernel coverage), runs each
	// file once more after its replay, whole, as compare runs a script:
	// the streamed replay carries no observations. What comes back goes
	// to the pair's Observed.
	Observe ops.Observing
}

// ReplayFiles replays the files in turn, telling the sink of the start, of
// each file's verdict and of the end (after an error too: the files not
// replayed are said to be not run). An ended context is not an error: the
// result says Interrupted, and its Checks how many files were replayed.
func ReplayFiles(ctx context.Context, r FilesReplay) (*Result, error) {
	a, b := r.Sides[0], r.Sides[1]
	res := &Result{A: a.Name, B: b.Name, Subsystem: joinUnique(r.Subsystems), Relation: string(r.Relation),
		KernelA: Release(a), KernelB: Release(b), Scripts: []string{}, Findings: []Finding{}, Causes: []Cause{},
		Expected: []Expected{}, StaleKnown: []*corpus.KnownEntry{}, Events: []Event{}}
	res.Kernel = joinUnique(slices.DeleteFunc([]string{res.KernelA, res.KernelB}, func(s string) bool { return s == "" }))
	r.Sink.Start(Start{Command: fmt.Sprintf("ipcfuzz replay --impls %s,%s --equiv %s %s", a.Name, b.Name, r.Relation, strings.Join(r.Files, " ")),
		A: a.Name, B: b.Name, KernelA: res.KernelA, KernelB: res.KernelB, Subsystem: res.Subsystem, Relation: res.Relation, Files: r.Files})
	start := time.Now()
	err := r.each(ctx, res)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	r.Sink.End(End{Result: res, Err: err})
	return res, err
}

// each replays every file and tells the sink its verdict, until the end,
// an error or the end of ctx.
func (r *FilesReplay) each(ctx context.Context, res *Result) error {
	for i, f := range r.Files {
		if ctx.Err() != nil {
			res.Interrupted = true
			return nil
		}
		p, err := r.Pair(r.Subsystems[i])
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		n, err := replayFile(ctx, f, p)
		var re *ReplayError
		var pe *ops.ParseError
		switch {
		case err == nil:
			r.Sink.Script(Script{Index: i, Name: f, Verdict: ScriptAgree, Ops: n})
		case errors.As(err, &re):
			res.Divergences++
			res.Scripts = append(res.Scripts, f)
			r.Sink.Script(Script{Index: i, Name: f, Verdict: ScriptDiverged, Ops: n, Problems: re.Problems, Table: re.Table})
		case errors.As(err, &pe):
			return err // the file changed since it was checked
		default:
			return fmt.Errorf("%s: %w", f, err)
		}
		res.Checks++
		res.Ops += n
		if err := r.observe(ctx, f, p); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// observe runs file f once more, whole, on p with the sides asked for
// r.Observe, when it asks for anything.
func (r *FilesReplay) observe(ctx context.Context, f string, p *Pair) error {
	if r.Observe == (ops.Observing{}) {
		return nil
	}
	s, err := corpus.Read(f)
	if err != nil {
		return err
	}
	a, b := p.A.Config.Observe, p.B.Config.Observe
	p.A.Config.Observe, p.B.Config.Observe = r.Observe, r.Observe
	defer func() { p.A.Config.Observe, p.B.Config.Observe = a, b }()
	if _, err := p.Check(ctx, [][]ops.Op{s.Ops()}); err != nil {
		return fmt.Errorf("running it again for its observations: %w", err)
	}
	return nil
}

// joinUnique joins the distinct strings of ss, in order of first
// appearance, with commas.
func joinUnique(ss []string) string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

// CheckScripts checks every file (CheckScript) and returns their
// subsystems; the first bad one is the error.
func CheckScripts(files []string) ([]string, error) {
	subsystems := make([]string, len(files))
	for i, f := range files {
		var err error
		if subsystems[i], err = CheckScript(f); err != nil {
			return nil, err
		}
	}
	return subsystems, nil
}

// CheckScript reads a script file through, as strictly as corpus.Read and
// with its errors, holding none of it, and returns its subsystem.
func CheckScript(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := ops.NewScriptReader(path, f)
	for r.Next() {
	}
	return r.Subsystem(), r.Err()
}

// replayFile replays a script file read step by step on the pair
// (Pair.Replay) and returns how many steps it replayed.
func replayFile(ctx context.Context, path string, p *Pair) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return p.Replay(ctx, ops.NewScriptReader(path, f), ReplayOptions{})
}
