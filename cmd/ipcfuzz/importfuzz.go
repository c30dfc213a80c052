package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// importFuzzCmd is "ipcfuzz corpus import-fuzz FILE... --subsystem S
// [--impls A,B,...]": it turns failing go test -fuzz inputs into corpus
// findings. Each input draws the script the fuzz target drew from it; the
// script runs on each neighbouring pair of the implementations (as the
// fuzz target compares them, runner.RunChain) and a divergence is shrunk,
// signed and written as compare --keep-going writes it. It exits 1 if any
// input reproduced, and prints the summary object with --json.
func importFuzzCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var subsystem, implList, dir string
	var asJSON bool
	var sf sides.Flags
	_, files, err := parse("corpus import-fuzz", args, []cli.Flag{
		cli.Opt("subsystem", nil, "the subsystem of the fuzz target: "+strings.Join(props.Names(), ", "), &subsystem),
		cli.Opt("impls", "naive,optimized,kernel", "the implementations the fuzz target compared (IPCFUZZ_IMPLS)", &implList),
		cli.Opt("corpus", "corpus", "directory where findings are written", &dir),
		cli.Opt("json", nil, "end with one JSON object on stdout", &asJSON),
	}, sf.Rows(60*time.Second))
	if err != nil {
		return err
	}
	sub, err := props.Lookup(subsystem)
	if err != nil || len(files) == 0 {
		return cli.UsageError{Msg: "usage: ipcfuzz corpus import-fuzz FILE... --subsystem S [--impls A,B,...] [--corpus DIR] [--json]"}
	}
	scripts, err := sub.DrawFuzzFiles(files)
	if err != nil {
		return cli.InputError{Err: err}
	}
	names := strings.Split(implList, ",")
	if len(names) < 2 {
		return cli.UsageError{Msg: "--impls: a comparison needs at least two implementations"}
	}
	var report bytes.Buffer
	var openErr error // returned as it is; a run's error says where it is from
	version, revision := corpus.BuildVersion()
	res, err := runner.RunChain(ctx, names, sub.Name, func(a, b string) (p *runner.Pair, closeAll func(), err error) {
		p, closeAll, openErr = sf.OpenPair(context.WithoutCancel(ctx), a, b, sub.Name, equiv.Exact, sub.Invariant)
		return p, closeAll, openErr
	}, func(p *runner.Pair) runner.Options {
		return runner.Options{Version: version, Revision: revision,
			Pairs: []*runner.Pair{p}, Checks: len(scripts), Batch: 1, Corpus: dir, KeepGoing: true,
			Source:  runner.Seeded(runner.Given(scripts)),
			Command: fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --equiv exact (go test -fuzz inputs %s)", p.A.Name, p.B.Name, sub.Name, strings.Join(files, " ")),
			Report:  &report, Engine: "fuzz",
		}
	})
	if err != nil && err != openErr {
		return fmt.Errorf("corpus import-fuzz: %w", err)
	} else if err != nil {
		return err
	}
	fmt.Fprint(stderr, report.String())
	if res.Checks == 0 && ctx.Err() != nil {
		return errors.Join(cli.InterruptedError{Msg: "corpus import-fuzz interrupted"}, ctx.Err())
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return fmt.Errorf("corpus import-fuzz: %w", err)
		}
	}
	if res.Divergences > 0 || res.Failures > 0 {
		return cli.Foundf("%d of %d fuzz inputs diverged; scripts: %s", len(res.Findings), len(files), strings.Join(res.Scripts, " "))
	}
	return nil
}
