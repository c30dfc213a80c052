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
	var cf coverFlags
	sf.Notes = stderr
	_, files, err := parse("replay", args, []cli.Flag{
		cli.Opt("impls", "optimized,kernel", "the two implementations, A,B", &implsFlag),
		cli.Opt("equiv", "exact", "equivalence: exact or ids-renamed", &eq),
	}, sf.Rows(60*time.Second), ff.Flags(sink.Formats), cf.flags())
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
	if err := cf.prepare(names...); err != nil {
		return err
	}
	// Every file is read through (and refused, one line, if it is not a
	// strict script) before any plugin starts; none is held: each is read
	// again, step by step, as it is replayed.
	subsystems, err := runner.CheckScripts(files)
	if err != nil {
		return cli.InputError{Err: err}
	}
	ss, closeAll, err := sf.OpenAll(context.WithoutCancel(ctx), names...)
	defer closeAll()
	if err != nil {
		return err
	}
	r := runner.FilesReplay{Files: files, Subsystems: subsystems, Sides: [2]runner.Side{ss[0], ss[1]}, Relation: rel}
	r.Observe.Cover = cf.run != nil
	runErr := replayFiles(ctx, r, format, stdout, stderr, cf.attach)
	// The coverage of what was replayed, however the replay ended.
	if err := cf.write(format, stdout, stderr); err != nil && runErr == nil {
		return err
	}
	return runErr
}

// replayFiles replays r's files, on pairs of its sides for each
// subsystem, prints them in format and says how the replay ended. Each
// pair is given to attach (nil: none) before it replays.
func replayFiles(ctx context.Context, r runner.FilesReplay, format string, stdout, stderr io.Writer, attach func(*runner.Pair)) error {
	out, err := sink.New(format, stdout, stderr)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	r.Sink = out
	r.Pair = func(subsystem string) (*runner.Pair, error) {
		sub, err := props.Lookup(subsystem)
		if err != nil {
			return nil, err
		}
		p, err := sub.Pair(context.WithoutCancel(ctx), r.Sides[0], r.Sides[1], r.Relation)
		if err == nil && attach != nil {
			attach(p)
		}
		return p, err
	}
	res, runErr := runner.ReplayFiles(ctx, r)
	if err := out.Err(); err != nil {
		return fmt.Errorf("writing the %s output: %w", format, err)
	}
	switch {
	case runErr != nil:
		return runErr
	case res.Interrupted:
		return cli.Interruptedf("interrupted after %d of %d scripts (%d failed)", res.Checks, len(r.Files), res.Divergences)
	case res.Divergences > 0:
		return cli.Foundf("%d of %d scripts failed on %s vs %s", res.Divergences, len(r.Files), sink.SideLabel(r.Sides[0].Name, res.KernelA), sink.SideLabel(r.Sides[1].Name, res.KernelB))
	}
	return nil
}
