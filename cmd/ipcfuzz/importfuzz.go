package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// importFuzzCmd is "ipcfuzz corpus import-fuzz FILE... --subsystem S
// [--impls A,B,...]": it turns failing go test -fuzz inputs into corpus
// findings. Each input draws the script the fuzz target drew from it; the
// script runs on each neighbouring pair of the implementations (as the
// fuzz target compares them) and a divergence is shrunk, signed and
// written as compare --keep-going writes it. It exits 1 if any input
// reproduced, and prints the summary object with --json.
func importFuzzCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("corpus import-fuzz", flag.ContinueOnError)
	subsystem := fs.String("subsystem", "", "the subsystem of the fuzz target: "+strings.Join(props.Names(), ", "))
	implList := fs.String("impls", "naive,optimized,kernel", "the implementations the fuzz target compared (IPCFUZZ_IMPLS)")
	dir := fs.String("corpus", "corpus", "directory where findings are written")
	asJSON := fs.Bool("json", false, "end with one JSON object on stdout")
	var sf sideFlags
	sf.register(fs, 60*time.Second)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	sub, err := props.Lookup(*subsystem)
	if err != nil || len(files) == 0 {
		return usageError{"usage: ipcfuzz corpus import-fuzz FILE... --subsystem S [--impls A,B,...] [--corpus DIR] [--json]"}
	}
	scripts, err := fuzzScripts(sub, files)
	if err != nil {
		return inputError{err}
	}
	names := strings.Split(*implList, ",")
	if len(names) < 2 {
		return usageError{"--impls: a comparison needs at least two implementations"}
	}
	res, err := importChain(ctx, sf, sub, names, files, scripts, *dir, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return fmt.Errorf("corpus import-fuzz: %w", err)
		}
	}
	if res.Divergences > 0 || res.Failures > 0 {
		return foundError{fmt.Sprintf("%d of %d fuzz inputs diverged; scripts: %s", len(res.Findings), len(files), strings.Join(res.Scripts, " "))}
	}
	return nil
}

// fuzzScripts draws each input's script as the fuzz target does.
func fuzzScripts(sub engine.Subsystem, files []string) ([][]ops.Op, error) {
	out := make([][]ops.Op, len(files))
	for i, f := range files {
		data, err := corpus.ReadFuzzInput(f)
		if err != nil {
			return nil, err
		}
		out[i] = sub.DrawFuzz(&engine.ByteSource{Data: data})
	}
	return out, nil
}

// importChain compares each neighbouring pair on every script, keeping
// going, and sums what the runs found.
func importChain(ctx context.Context, sf sideFlags, sub engine.Subsystem, names, files []string, scripts [][]ops.Op, dir string, stderr io.Writer) (*runner.Result, error) {
	total := runner.NewResult(&runner.Pair{A: runner.Side{Name: names[0]}, B: runner.Side{Name: names[len(names)-1]}, Subsystem: sub.Name}, 0, "")
	var report bytes.Buffer
	for i := 1; i < len(names); i++ {
		p, closeAll, err := sf.openPair(context.WithoutCancel(ctx), names[i-1], names[i], sub, equiv.Exact)
		if err != nil {
			return nil, err
		}
		version, revision := corpus.BuildVersion()
		res, err := runner.Run(ctx, runner.Options{Version: version, Revision: revision,
			Pairs: []*runner.Pair{p}, Checks: len(scripts), Batch: 1, Corpus: dir, KeepGoing: true,
			Source:  runner.Seeded(runner.Given(scripts)),
			Command: fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --equiv exact (go test -fuzz inputs %s)", p.A.Name, p.B.Name, sub.Name, strings.Join(files, " ")),
			Report:  &report, Engine: "fuzz",
		})
		closeAll()
		if err != nil {
			return nil, fmt.Errorf("corpus import-fuzz: %w", err)
		}
		total.Add(res)
	}
	fmt.Fprint(stderr, report.String())
	if total.Checks == 0 && ctx.Err() != nil {
		return nil, errors.Join(interruptedError{"corpus import-fuzz interrupted"}, ctx.Err())
	}
	return total, nil
}
