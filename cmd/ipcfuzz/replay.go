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

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

func replayCmd(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	implsFlag := fs.String("impls", "optimized,kernel", "the two implementations, A,B")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	var sf sideFlags
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
	var infos [2]ops.Info
	for i, n := range names {
		s, info, err := sf.open(setup, n)
		if err != nil {
			return err
		}
		defer s.Impl.Close()
		sides[i], infos[i] = s, info
	}
	sides[0].Config = runner.WithLimits(sides[0].Config, infos[1])
	sides[1].Config = runner.WithLimits(sides[1].Config, infos[0])
	failed := 0
	for i, f := range files {
		if ctx.Err() != nil {
			return interruptedError{fmt.Sprintf("interrupted after %d of %d scripts (%d failed)", i, len(files), failed)}
		}
		sub, err := props.Lookup(subsystems[i])
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", f, err)}
		}
		for j, info := range infos {
			if !slices.Contains(info.Subsystems, subsystems[i]) {
				return inputError{fmt.Errorf("%s: %s does not run subsystem %s (it runs %s)", f, sides[j].Name, subsystems[i], strings.Join(info.Subsystems, ", "))}
			}
		}
		a, b := sides[0], sides[1]
		a.Follows, b.Follows = a.Follows && sub.Races(), b.Follows && sub.Races()
		n, err := replayFile(ctx, f, a, b, rel)
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
		return foundError{fmt.Sprintf("%d of %d scripts failed on %s vs %s", failed, len(files), sides[0].Name, sides[1].Name)}
	}
	fmt.Fprintf(stdout, "%d scripts agree on %s vs %s\n", len(files), sides[0].Name, sides[1].Name)
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

// replayFile replays a script file read step by step (runner.ReplaySteps)
// and returns how many steps it replayed.
func replayFile(ctx context.Context, path string, a, b runner.Side, rel equiv.Relation) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return runner.ReplaySteps(ctx, ops.NewScriptReader(path, f), a, b, rel, runner.ReplayOptions{})
}
