package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/repro"
)

// reproCmd writes the C reproducer of a script: libc only, it runs the
// script's syscalls on the kernel it runs on, in a private IPC namespace,
// and checks every result against the expected one.
func reproCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	out := fs.String("o", "", "write the C file here (default: stdout)")
	expect := fs.String("expect", "a", "whose results the program expects of the kernel: a or b, the sides of a finding's table (a script without one: its stated results)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"repro needs one script file"}
	}
	if *expect != "a" && *expect != "b" {
		return usageError{fmt.Sprintf("--expect %q: want a or b", *expect)}
	}
	src, err := reproSource(files[0], *expect)
	if err != nil {
		return inputError{err}
	}
	if *out == "" {
		_, err := stdout.Write(src)
		return err
	}
	if err := writeFileAtomic(*out, src); err != nil {
		return fmt.Errorf("repro: %w", err)
	}
	return nil
}

// reproSource is the C reproducer of the script in path, expecting the
// results of side (a or b) of its table, or its stated results.
func reproSource(path, side string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := ops.Parse(path, strings.NewReader(string(text)))
	if err != nil {
		return nil, err
	}
	opt, err := reproExpectations(path, string(text), sc, side)
	if err != nil {
		return nil, err
	}
	src, err := repro.Write(sc, opt)
	var un *repro.Unsupported
	if errors.As(err, &un) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, err
}

// reproExpectations takes the expected results from a finding's table
// (side a or b) or, without one, from the results the script states, and
// the header's lines as notes.
func reproExpectations(path, text string, sc *ops.Script, side string) (repro.Options, error) {
	opt := repro.Options{Notes: []string{"From " + path + "."}}
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if strings.Contains(l, "step  A: ") {
			break // the table: its results are the expectations
		}
		if n := strings.TrimSpace(strings.TrimPrefix(l, "#")); n != "" {
			opt.Notes = append(opt.Notes, n)
		}
	}
	steps := sc.Ops()
	a, b, ok, err := corpus.ParseSides(text, sc)
	if err != nil {
		return opt, fmt.Errorf("%s: %w", path, err)
	}
	opt.Expect = make([]string, len(steps))
	if ok {
		s := a
		if side == "b" {
			s = b
		}
		opt.ExpectFrom = fmt.Sprintf("side %s of the finding, %s", strings.ToUpper(side), s.Name)
		for i, r := range s.Results {
			opt.Expect[i] = ops.FormatResult(steps[i], r)
		}
		return opt, nil
	}
	if side == "b" {
		return opt, fmt.Errorf("%s has no side-by-side table: --expect b needs a finding", path)
	}
	opt.ExpectFrom = "the results the script states"
	for i, st := range sc.Steps {
		if st.Want != nil {
			opt.Expect[i] = ops.FormatResult(st.Op, *st.Want)
		}
	}
	return opt, nil
}
