package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// fuzzFileHeader is the first line of a go test -fuzz corpus file.
const fuzzFileHeader = "go test fuzz v1"

// readFuzzInput reads the []byte argument of a go test -fuzz corpus file
// (what a failing input written to testdata/fuzz/FuzzX/ holds).
func readFuzzInput(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != fuzzFileHeader {
		return nil, fmt.Errorf("%s: not a go test fuzz v1 file with one argument", path)
	}
	arg := strings.TrimSpace(lines[1])
	if !strings.HasPrefix(arg, "[]byte(") || !strings.HasSuffix(arg, ")") {
		return nil, fmt.Errorf("%s:2: want []byte(\"...\")", path)
	}
	s, err := strconv.Unquote(arg[len("[]byte(") : len(arg)-1])
	if err != nil {
		return nil, fmt.Errorf("%s:2: %w", path, err)
	}
	return []byte(s), nil
}

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
		data, err := readFuzzInput(f)
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
	total := &runner.Result{A: names[0], B: names[len(names)-1], Subsystem: sub.Name, Scripts: []string{}, Findings: []runner.Finding{}, Causes: []runner.Cause{},
		Events: []runner.Event{}, Expected: []runner.Expected{}, StaleKnown: []*corpus.KnownEntry{}}
	var report bytes.Buffer
	for i := 1; i < len(names); i++ {
		p, closeAll, err := sf.openPair(context.WithoutCancel(ctx), names[i-1], names[i], sub, equiv.Exact)
		if err != nil {
			return nil, err
		}
		version, revision := buildVersion()
		res, err := runner.Run(ctx, runner.Options{Version: version, Revision: revision,
			Pairs: []*runner.Pair{p}, Checks: len(scripts), Batch: 1, Corpus: dir, KeepGoing: true,
			Source:  runner.Seeded(func(seed uint64) []ops.Op { return scripts[indexOfSeed(seed, len(scripts))] }),
			Command: fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --equiv exact (go test -fuzz inputs %s)", p.A.Name, p.B.Name, sub.Name, strings.Join(files, " ")),
			Report:  &report, Engine: "fuzz",
		})
		closeAll()
		if err != nil {
			return nil, fmt.Errorf("corpus import-fuzz: %w", err)
		}
		addResult(total, res)
	}
	fmt.Fprint(stderr, report.String())
	if total.Checks == 0 && ctx.Err() != nil {
		return nil, errors.Join(interruptedError{"corpus import-fuzz interrupted"}, ctx.Err())
	}
	return total, nil
}

// indexOfSeed maps the runner's script seed back to the script's index:
// the runner asks for ScriptSeed(0, i) in order.
func indexOfSeed(seed uint64, n int) int {
	for i := range n {
		if runner.ScriptSeed(0, i) == seed {
			return i
		}
	}
	return 0
}

// addResult adds one pair's run to the total.
func addResult(total, r *runner.Result) {
	total.Checks += r.Checks
	total.Ops += r.Ops
	total.Divergences += r.Divergences
	total.Failures += r.Failures
	total.Seconds += r.Seconds
	total.Interrupted = total.Interrupted || r.Interrupted
	total.Scripts = append(total.Scripts, r.Scripts...)
	total.Findings = append(total.Findings, r.Findings...)
	total.Causes = append(total.Causes, r.Causes...)
	total.Infrastructure += r.Infrastructure
	total.Events = append(total.Events, r.Events...)
	total.Unstored += r.Unstored
	total.Engine, total.Relation = r.Engine, r.Relation
	if r.Kernel != "" {
		total.Kernel = r.Kernel
	}
}
