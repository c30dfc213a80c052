package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	idsprops "github.com/ipcfuzz/ipcfuzz/props/ids"
	msgprops "github.com/ipcfuzz/ipcfuzz/props/msg"
	shmprops "github.com/ipcfuzz/ipcfuzz/props/shm"
)

// generator returns the script generator of a subsystem and engine.
func generator(subsystem, engine string, rel equiv.Relation) (func(uint64) []ops.Op, error) {
	type gens struct {
		rapid, gopter func(equiv.Relation) func(uint64) []ops.Op
	}
	byName := map[string]gens{
		"ids": {idsprops.RapidScripts, idsprops.GopterScripts},
		"shm": {shmprops.RapidScripts, shmprops.GopterScripts},
		// Message-queue scripts name ids only through handles; the relation
		// does not change what is drawn.
		"msg": {func(equiv.Relation) func(uint64) []ops.Op { return msgprops.RapidScripts() },
			func(equiv.Relation) func(uint64) []ops.Op { return msgprops.GopterScripts() }},
	}
	g, ok := byName[subsystem]
	if !ok {
		return nil, usageError{fmt.Sprintf("unknown subsystem %q (have: ids, shm, msg)", subsystem)}
	}
	switch engine {
	case "rapid":
		return g.rapid(rel), nil
	case "gopter":
		return g.gopter(rel), nil
	}
	return nil, usageError{fmt.Sprintf("unknown engine %q (want rapid or gopter)", engine)}
}

func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	subsystem := fs.String("subsystem", "ids", "subsystem to compare")
	engine := fs.String("engine", "rapid", "script generator: rapid or gopter")
	checks := fs.Int("checks", 0, "number of scripts to run (default 1000, or unlimited with --time)")
	dur := fs.Duration("time", 0, "run for this long")
	seed := fs.Uint64("seed", 0, "seed of the first script (default: random, printed)")
	eq := fs.String("equiv", "exact", "equivalence: exact or ids-renamed")
	asJSON := fs.Bool("json", false, "end with one JSON object on stdout")
	stats := fs.Bool("stats", false, "count scripts with a task blocked then completed, and with a race")
	corpusDir := fs.String("corpus", "corpus", "directory where findings are written")
	batch := fs.Int("batch", 256, "scripts per plugin call")
	callTimeout := fs.Duration("call-timeout", 60*time.Second, "deadline of one plugin call")
	inProcess := fs.Bool("in-process", false, "run built-in implementations inside this process")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{"compare needs two implementations: ipcfuzz compare A B"}
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		*seed = rand.Uint64() >> 1
	}
	if *checks < 0 || *dur < 0 {
		return usageError{"--checks and --time must not be negative"}
	}
	if *checks == 0 && *dur == 0 {
		*checks = 1000
	}
	rel, err := equiv.Parse(*eq)
	if err != nil {
		return usageError{err.Error()}
	}
	gen, err := generator(*subsystem, *engine, rel)
	if err != nil {
		return err
	}
	a, err := openSide(ctx, pos[0], *inProcess, *callTimeout)
	if err != nil {
		return err
	}
	defer a.Impl.Close()
	b, err := openSide(ctx, pos[1], *inProcess, *callTimeout)
	if err != nil {
		return err
	}
	defer b.Impl.Close()
	for _, s := range []runner.Side{a, b} {
		info, err := s.Impl.Info(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if !contains(info.Subsystems, *subsystem) {
			return usageError{fmt.Sprintf("%s does not implement subsystem %s (it has %s)", s.Name, *subsystem, strings.Join(info.Subsystems, ", "))}
		}
		if err := s.Impl.Reset(ctx, s.Config); err != nil {
			return fmt.Errorf("%s refuses its configuration: %w", s.Name, err)
		}
	}
	// Following costs the parallel run of both sides; only msg needs it.
	a.Follows = a.Follows && *subsystem == "msg"
	b.Follows = b.Follows && *subsystem == "msg"
	command := fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --seed %d --equiv %s", a.Name, b.Name, *subsystem, *engine, *seed, rel)
	report := stdout
	if *asJSON {
		report = stderr
	}
	fmt.Fprintf(stderr, "ipcfuzz: %s\n", command)
	res, runErr := runner.Run(ctx, runner.Options{
		A: a, B: b, Subsystem: *subsystem, Relation: rel, Generate: gen,
		Seed: *seed, Checks: *checks, Duration: *dur, Batch: *batch,
		Corpus: *corpusDir, Command: command, Progress: stderr, Report: report, Stats: *stats,
	})
	if res != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			if err := enc.Encode(res); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "%s vs %s (%s, engine %s, seed %d, %s): %d checks, %d ops in %.1fs (%.0f ops/s): %d divergences, %d plugin failures\n",
				res.A, res.B, res.Subsystem, *engine, *seed, rel, res.Checks, res.Ops, res.Seconds, res.OpsPerSec, res.Divergences, res.Failures)
			if st := res.Stats; st != nil && res.Checks > 0 {
				fmt.Fprintf(stdout, "stats: %d of %d sequences (%.1f%%) had a task blocked and later completed; %d (%.1f%%) had a race (an operation with several allowed outcomes)\n",
					st.BlockedThenCompleted, res.Checks, 100*float64(st.BlockedThenCompleted)/float64(res.Checks),
					st.Races, 100*float64(st.Races)/float64(res.Checks))
			}
		}
	}
	if runErr != nil {
		return runErr
	}
	if res.Divergences > 0 || res.Failures > 0 {
		return foundError{fmt.Sprintf("%d divergences, %d plugin failures; scripts: %s", res.Divergences, res.Failures, strings.Join(res.Scripts, " "))}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
