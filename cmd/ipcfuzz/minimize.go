package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
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
	if err := checkEmptyOut(out); err != nil {
		return err
	}
	rs, closeAll, err := replayers(ctx, &sf, strings.Split(implList, ","))
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

// replayers are the implementations named: a built-in one replays in
// process on a fresh instance per script, any other side is opened (a
// plugin, a kernel in a guest) and runs each script on a fresh state, asked
// for kernel coverage.
func replayers(ctx context.Context, sf *sides.Flags, names []string) ([]corpus.Replayer, func(), error) {
	var rs []corpus.Replayer
	var closers []func()
	closeAll := func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	for _, n := range names {
		if r, err := sides.Replayers([]string{n}); err == nil {
			rs = append(rs, r...)
			continue
		}
		ss, closeSide, err := sf.OpenAll(context.WithoutCancel(ctx), n)
		closers = append(closers, closeSide)
		if err != nil {
			return nil, closeAll, err
		}
		s := ss[0]
		rs = append(rs, corpus.Replayer{Name: s.Name, Subsystems: s.Info.Subsystems, Replay: func(sc *ops.Script) (ops.Outcome, error) {
			cfg := s.Config
			cfg.Observe.Cover = true
			outs, err := s.Impl.Exec(ctx, cfg, [][]ops.Op{sc.Ops()}, nil)
			if err == nil && len(outs) != 1 {
				err = fmt.Errorf("%s returned %d outcomes for 1 script", s.Name, len(outs))
			}
			if err != nil {
				return ops.Outcome{}, err
			}
			return outs[0], nil
		}})
	}
	return rs, closeAll, nil
}

// checkEmptyOut refuses an --out directory that holds anything.
func checkEmptyOut(out string) error {
	if out == "" {
		return nil
	}
	entries, err := os.ReadDir(out)
	if err == nil && len(entries) > 0 {
		return cli.Usagef("--out %s is not empty: minimize writes into an empty directory", out)
	}
	return nil
}
