package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	implsFlag := fs.String("impls", "optimized,kernel", "the two implementations, A,B")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	var sf sideFlags
	sf.notes = stderr
	sf.register(fs, 60*time.Second)
	files, err := parseInterspersed(fs, args)
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
	failed := 0
	for i, f := range files {
		if ctx.Err() != nil {
			return interruptedError{fmt.Sprintf("interrupted after %d of %d scripts (%d failed)", i, len(files), failed)}
		}
		sub, err := props.Lookup(subsystems[i])
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", f, err)}
		}
		p, err := sub.Pair(setup, sides[0], sides[1], rel)
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", f, err)}
		}
		n, err := replayFile(ctx, f, p)
		var re *runner.ReplayError
		var pe *ops.ParseError
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "ok    %s (%d ops)\n", f, n)
		case errors.As(err, &re):
			failed++
			fmt.Fprintf(stdout, "FAIL  %s:\n", f)
			for _, p := range re.Problems {
				fmt.Fprintf(stdout, "  %s\n", p)
			}
			fmt.Fprint(stdout, re.Table)
		case errors.As(err, &pe):
			return inputError{err} // the file changed since it was checked
		default:
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if failed > 0 {
		return foundError{fmt.Sprintf("%d of %d scripts failed on %s vs %s", failed, len(files), sideLabel(sides[0].Name, runner.Release(sides[0])), sideLabel(sides[1].Name, runner.Release(sides[1])))}
	}
	fmt.Fprintf(stdout, "%d scripts agree on %s vs %s\n", len(files), sideLabel(sides[0].Name, runner.Release(sides[0])), sideLabel(sides[1].Name, runner.Release(sides[1])))
	return nil
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
