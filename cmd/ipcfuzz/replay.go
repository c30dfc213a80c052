package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	implsFlag := fs.String("impls", "optimized,kernel", "the two implementations, A,B")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	callTimeout := fs.Duration("call-timeout", 60*time.Second, "deadline of one plugin call")
	inProcess := fs.Bool("in-process", false, "run built-in implementations inside this process")
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
	a, err := openSide(ctx, names[0], *inProcess, *callTimeout)
	if err != nil {
		return err
	}
	defer a.Impl.Close()
	b, err := openSide(ctx, names[1], *inProcess, *callTimeout)
	if err != nil {
		return err
	}
	defer b.Impl.Close()
	failed := 0
	for _, f := range files {
		sc, err := corpus.Read(f)
		if err != nil {
			return err
		}
		fa, fb := a, b
		fa.Follows = a.Follows && sc.Subsystem == "msg"
		fb.Follows = b.Follows && sc.Subsystem == "msg"
		err = runner.Replay(ctx, sc, fa, fb, rel)
		var re *runner.ReplayError
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "ok    %s (%d ops)\n", f, len(sc.Steps))
		case errors.As(err, &re):
			failed++
			fmt.Fprintf(stdout, "FAIL  %s: %s\n%s", f, re.Problem, re.Table)
		default:
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if failed > 0 {
		return foundError{fmt.Sprintf("%d of %d scripts failed on %s vs %s", failed, len(files), a.Name, b.Name)}
	}
	fmt.Fprintf(stdout, "%d scripts agree on %s vs %s\n", len(files), a.Name, b.Name)
	return nil
}

// listCmd prints the built-in implementations and what they support.
func listCmd(ctx context.Context, stdout io.Writer) error {
	return listBuiltins(ctx, stdout)
}
