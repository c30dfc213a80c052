package main

import (
	"context"
	"errors"
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
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
	"github.com/ipcfuzz/ipcfuzz/props"
)

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	implsFlag := fs.String("impls", "optimized,kernel", "the two implementations, A,B")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	var sf sideFlags
	sf.notes = stderr
	sf.register(fs, 60*time.Second)
	var ff formatFlag
	ff.register(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	format, err := ff.format()
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{"replay needs at least one script file"}
	}
	names := strings.Split(*implsFlag, ",")
	if len(names) != 2 {
		return usageError{fmt.Sprintf("--impls %q: want two implementations, A,B", *implsFlag)}
	}
	rel, err := equiv.Parse(*eq)
	if err != nil {
		return usageError{err.Error()}
	}
	// Every file is read through (and refused, one line, if it is not a
	// strict script) before any plugin starts; none is held: each is read
	// again, step by step, as it is replayed.
	subsystems := make([]string, len(files))
	for i, f := range files {
		if subsystems[i], err = checkScript(f); err != nil {
			return inputError{err}
		}
	}
	setup := context.WithoutCancel(ctx)
	var sides [2]runner.Side
	for i, n := range names {
		s, _, err := sf.open(setup, n)
		if err != nil {
			return err
		}
		defer s.Impl.Close()
		sides[i] = s
	}
	out, err := sink.New(format, stdout, stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	r := &replayRun{files: files, subsystems: subsystems, sides: sides, rel: rel, sink: out}
	runErr := r.run(ctx, setup)
	if err := out.Err(); err != nil {
		return fmt.Errorf("writing the %s output: %w", format, err)
	}
	return runErr
}

// replayRun replays files on two sides and tells a sink of each.
type replayRun struct {
	files, subsystems []string
	sides             [2]runner.Side
	rel               equiv.Relation
	sink              runner.Sink
}

// run replays the files in turn, telling the sink of the start, of each
// file's verdict and of the end (after an error too: the files not
// replayed are said to be not run).
func (r *replayRun) run(ctx, setup context.Context) error {
	a, b := r.sides[0], r.sides[1]
	res := &runner.Result{A: a.Name, B: b.Name, Subsystem: joinUnique(r.subsystems), Relation: string(r.rel),
		KernelA: runner.Release(a), KernelB: runner.Release(b), Scripts: []string{}, Findings: []runner.Finding{}, Causes: []runner.Cause{},
		Expected: []runner.Expected{}, StaleKnown: []*corpus.KnownEntry{}, Events: []runner.Event{}}
	res.Kernel = joinUnique(slices.DeleteFunc([]string{res.KernelA, res.KernelB}, func(s string) bool { return s == "" }))
	r.sink.Start(runner.Start{Command: fmt.Sprintf("ipcfuzz replay --impls %s,%s --equiv %s %s", a.Name, b.Name, r.rel, strings.Join(r.files, " ")),
		A: a.Name, B: b.Name, KernelA: res.KernelA, KernelB: res.KernelB, Subsystem: res.Subsystem, Relation: res.Relation, Files: r.files})
	start := time.Now()
	err := r.each(ctx, setup, res)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	var ie interruptedError
	endErr := err
	if errors.As(err, &ie) {
		res.Interrupted, endErr = true, nil
	}
	r.sink.End(runner.End{Result: res, Err: endErr})
	if err != nil {
		return err
	}
	if res.Divergences > 0 {
		return foundError{fmt.Sprintf("%d of %d scripts failed on %s vs %s", res.Divergences, len(r.files), sideLabel(a.Name, res.KernelA), sideLabel(b.Name, res.KernelB))}
	}
	return nil
}

// each replays every file and tells the sink its verdict, until the end,
// an error or the end of ctx.
func (r *replayRun) each(ctx, setup context.Context, res *runner.Result) error {
	for i, f := range r.files {
		if ctx.Err() != nil {
			return interruptedError{fmt.Sprintf("interrupted after %d of %d scripts (%d failed)", i, len(r.files), res.Divergences)}
		}
		sub, err := props.Lookup(r.subsystems[i])
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", f, err)}
		}
		p, err := sub.Pair(setup, r.sides[0], r.sides[1], r.rel)
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", f, err)}
		}
		n, err := replayFile(ctx, f, p)
		var re *runner.ReplayError
		var pe *ops.ParseError
		switch {
		case err == nil:
			r.sink.Script(runner.Script{Index: i, Name: f, Verdict: runner.ScriptAgree, Ops: n})
		case errors.As(err, &re):
			res.Divergences++
			res.Scripts = append(res.Scripts, f)
			r.sink.Script(runner.Script{Index: i, Name: f, Verdict: runner.ScriptDiverged, Ops: n, Problems: re.Problems, Table: re.Table})
		case errors.As(err, &pe):
			return inputError{err} // the file changed since it was checked
		default:
			return fmt.Errorf("%s: %w", f, err)
		}
		res.Checks++
		res.Ops += n
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

// checkScript reads a script file through, as strictly as corpus.Read and
// with its errors, holding none of it, and returns its subsystem.
func checkScript(path string) (string, error) {
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
// (runner.Pair.Replay) and returns how many steps it replayed.
func replayFile(ctx context.Context, path string, p *runner.Pair) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return p.Replay(ctx, ops.NewScriptReader(path, f), runner.ReplayOptions{})
}
