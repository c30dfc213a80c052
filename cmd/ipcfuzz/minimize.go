package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// minimizeCmd is "ipcfuzz corpus minimize [DIR] [--out EMPTY]"
// (corpus.Minimize on fresh in-process models): without --out it is a dry
// run that only reports; with --out it writes the kept scripts there, and
// DIR is never touched.
func minimizeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var out, implList string
	var asJSON bool
	var sf sides.Flags
	sf.Notes = stderr
	_, pos, err := parse("corpus minimize", args, []cli.Flag{
		cli.Opt("out", nil, "write the kept scripts into this empty (or new) directory; without it, a dry run", &out),
		cli.Opt("impls", "naive,optimized", "implementations to replay on: built-in ones in-process, any other side (a KCOV kernel:image=, whose program counters count as features) as a plugin", &implList),
		cli.Opt("json", nil, "print the report as one JSON object", &asJSON),
	}, sf.Rows(60*time.Second))
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.UsageError{Msg: "usage: ipcfuzz corpus minimize [DIR] [--out EMPTYDIR] [--impls A,B] [--json]"}
	}
	dir := "corpus"
	if len(pos) == 1 {
		dir = pos[0]
	}
	if err := corpus.CheckEmptyOut(out); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	rs, closeAll, err := sf.Replayers(ctx, strings.Split(implList, ","))
	defer closeAll()
	if err != nil {
		return err
	}
	rep, err := corpus.Minimize(ctx, dir, rs)
	switch {
	case err != nil && ctx.Err() != nil:
		return cli.InterruptedError{Msg: strings.TrimSuffix(err.Error(), ": "+ctx.Err().Error())}
	case err != nil:
		return cli.InputError{Err: err}
	}
	if out != "" {
		if err := corpus.CopyKept(dir, out, rep.Kept); err != nil {
			return err
		}
		rep.Out = out
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	rep.WriteText(stdout)
	return nil
}
