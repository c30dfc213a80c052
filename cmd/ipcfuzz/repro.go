package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
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
	e, err := f.Expect(path, side)
	if err != nil {
		return nil, "", err
	}
	opt := repro.Options{Expect: e.Results, ExpectFrom: e.From, Notes: e.Notes}
	if f.IsFinding() {
		same, err := f.SameAtEveryStep()
		if err != nil {
			return nil, "", err
		}
		if same {
			finalOnly = "sides A and B give the same result at every step (they differ in the final state, which the reproducer does not check): it exits 0 whichever side the kernel follows"
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
