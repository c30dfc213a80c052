package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var implsFlag, eq string
	var sf sides.Flags
	var ff cli.Format
	sf.Notes = stderr
	_, files, err := parse("replay", args, []cli.Flag{
		cli.Opt("impls", "optimized,kernel", "the two implementations, A,B", &implsFlag),
		cli.Opt("equiv", "exact", "equivalence: exact or ids-renamed", &eq),
	}, sf.Rows(60*time.Second), ff.Flags(sink.Formats))
	if err != nil {
		return err
	}
	format, err := ff.Value()
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return cli.UsageError{Msg: "replay needs at least one script file"}
	}
	names := strings.Split(implsFlag, ",")
	if len(names) != 2 {
		return cli.Usagef("--impls %q: want two implementations, A,B", implsFlag)
	}
	rel, err := equiv.Parse(eq)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	// Every file is read through (and refused, one line, if it is not a
	// strict script) before any plugin starts; none is held: each is read
	// again, step by step, as it is replayed.
	subsystems := make([]string, len(files))
	for i, f := range files {
		if subsystems[i], err = runner.CheckScript(f); err != nil {
			return cli.InputError{Err: err}
		}
	}
	setup := context.WithoutCancel(ctx)
	ss, closeAll, err := sf.OpenAll(setup, names...)
	defer closeAll()
	if err != nil {
		return err
	}
	sides := [2]runner.Side{ss[0], ss[1]}
	out, err := sink.New(format, stdout, stderr)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	res, runErr := runner.ReplayFiles(ctx, runner.FilesReplay{Files: files, Subsystems: subsystems, Sides: sides, Relation: rel, Sink: out,
		Pair: func(subsystem string) (*runner.Pair, error) {
			sub, err := props.Lookup(subsystem)
			if err != nil {
				return nil, err
			}
			return sub.Pair(setup, sides[0], sides[1], rel)
		}})
	if err := out.Err(); err != nil {
		return fmt.Errorf("writing the %s output: %w", format, err)
	}
	switch {
	case runErr != nil:
		return runErr
	case res.Interrupted:
		return cli.Interruptedf("interrupted after %d of %d scripts (%d failed)", res.Checks, len(files), res.Divergences)
	case res.Divergences > 0:
		return cli.Foundf("%d of %d scripts failed on %s vs %s", res.Divergences, len(files), sink.SideLabel(sides[0].Name, res.KernelA), sink.SideLabel(sides[1].Name, res.KernelB))
	}
	return nil
}
