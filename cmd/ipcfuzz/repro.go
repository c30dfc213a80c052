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
func reproCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	out := fs.String("o", "", "write the C file here (default: stdout)")
	expect := fs.String("expect", "a", "whose results the program expects of the kernel: a or b, the sides of a finding's table (a script without one: its stated results)")
	runOn := fs.String("run", "", "build the program and run it in a guest of this kernel side (kernel:image=PATH, kernel:source=DIR[,patches=DIR], kernel:base=V[,patches=DIR]); exit as it did")
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
	src, finalOnly, err := reproSource(files[0], *expect)
	if err != nil {
		return inputError{err}
	}
	if finalOnly != "" {
		fmt.Fprintf(stderr, "ipcfuzz: repro: %s: %s\n", files[0], finalOnly)
	}
	if *runOn != "" {
		return runReproInGuest(ctx, *runOn, src, *out, stdout, stderr)
	}
	if *out == "" {
		_, err := stdout.Write(src)
		return err
	}
	if err := corpus.WriteFileAtomic(*out, src, 0o644); err != nil {
		return fmt.Errorf("repro: %w", err)
	}
	return nil
}

// reproSource is the C reproducer of the script in path, expecting the
// results of side (a or b) of the finding, or a script's stated results.
// finalOnly says, for a finding whose sides give the same result at every
// step (they differ in the final state, which the program does not check),
// that its reproducer cannot tell them apart; it is "" otherwise.
func reproSource(path, side string) (src []byte, finalOnly string, err error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	f, err := corpus.ParseFinding(path, string(text))
	if err != nil {
		return nil, "", err
	}
	if err := f.FillFromTable(string(text)); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	opt, err := reproExpectations(path, f, side)
	if err != nil {
		return nil, "", err
	}
	if f.IsFinding() {
		if finalOnly, err = sameAtEveryStep(f); err != nil {
			return nil, "", err
		}
		if finalOnly != "" {
			opt.Notes = append(opt.Notes, finalOnly)
		}
	}
	src, err = repro.Write(f.Script, opt)
	var un *repro.Unsupported
	if errors.As(err, &un) {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return src, finalOnly, err
}

// sameAtEveryStep is the warning for a finding whose sides give the same
// result at every step, "" for one whose results differ somewhere.
func sameAtEveryStep(f *corpus.Finding) (string, error) {
	a, err := f.Expected("A")
	if err != nil {
		return "", err
	}
	b, err := f.Expected("B")
	if err != nil {
		return "", err
	}
	steps := f.Script.Ops()
	if len(a) != len(b) {
		return "", nil
	}
	for i := range a {
		if i < len(steps) && ops.FormatResult(steps[i], a[i]) != ops.FormatResult(steps[i], b[i]) {
			return "", nil
		}
	}
	return "sides A and B give the same result at every step (they differ in the final state, which the reproducer does not check): it exits 0 whichever side the kernel follows", nil
}

// reproExpectations takes the expected results from side a or b of a
// finding or, for a script that is no finding, from the results it
// states; and what the header says of where it was found, as notes.
func reproExpectations(path string, f *corpus.Finding, side string) (repro.Options, error) {
	opt := repro.Options{Notes: []string{"From " + path + "."}}
	h := f.Header
	for _, n := range []struct{ key, value string }{
		{"found by", h.Command}, {"kernel it was found on", h.Kernel}, {"date", h.Date},
		{"ipcfuzz revision", h.Revision}, {"signature", h.Signature},
	} {
		if n.value != "" {
			opt.Notes = append(opt.Notes, n.key+": "+n.value)
		}
	}
	if h.HasSeed {
		opt.Notes = append(opt.Notes, fmt.Sprintf("seed: %d (script %d, script seed %d)", h.Seed, h.Index, h.ScriptSeed))
	}
	opt.Notes = append(opt.Notes, f.Notes...)
	steps := f.Script.Ops()
	opt.Expect = make([]string, len(steps))
	if !f.IsFinding() {
		if side == "b" {
			return opt, fmt.Errorf("%s is a script, not a finding: --expect b needs a finding's side B", path)
		}
		opt.ExpectFrom = "the results the script states"
		for i, st := range f.Script.Steps {
			if st.Want != nil {
				opt.Expect[i] = ops.FormatResult(st.Op, *st.Want)
			}
		}
		return opt, nil
	}
	letter := strings.ToUpper(side)
	rs, err := f.Expected(letter)
	if err != nil {
		return opt, err
	}
	name := f.A.Name
	if letter == "B" {
		name = f.B.Name
	}
	opt.ExpectFrom = fmt.Sprintf("side %s of the finding, %s", letter, name)
	for i, r := range rs {
		if i < len(steps) {
			opt.Expect[i] = ops.FormatResult(steps[i], r)
		}
	}
	return opt, nil
}
