package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/repro"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// reproCmd writes the C reproducer of a script: libc only, it runs the
// script's syscalls on the kernel it runs on, in a private IPC namespace,
// and checks every result against the expected one.
func reproCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var out, expect, runOn string
	_, files, err := parse("repro", args, []cli.Flag{
		cli.Opt("o", nil, "write the C file here (default: stdout)", &out),
		cli.Opt("expect", "a", "whose results the program expects of the kernel: a or b, the sides of a finding's table (a script without one: its stated results)", &expect),
		cli.Opt("run", nil, "build the program and run it in a guest of this kernel side (kernel:image=PATH, kernel:source=DIR[,patches=DIR], kernel:base=V[,patches=DIR]); exit as it did", &runOn),
	})
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return cli.UsageError{Msg: "repro needs one script file"}
	}
	if expect != "a" && expect != "b" {
		return cli.Usagef("--expect %q: want a or b", expect)
	}
	src, finalOnly, err := reproSource(files[0], expect)
	if err != nil {
		return cli.InputError{Err: err}
	}
	if finalOnly != "" {
		fmt.Fprintf(stderr, "ipcfuzz: repro: %s: %s\n", files[0], finalOnly)
	}
	if runOn != "" {
		return sides.RunReproIn(ctx, runOn, src, out, stdout, stderr)
	}
	if out == "" {
		_, err := stdout.Write(src)
		return err
	}
	if err := corpus.WriteFileAtomic(out, src, 0o644); err != nil {
		return fmt.Errorf("repro: %w", err)
	}
	return nil
}

// reproSource is the C reproducer of the script in path, expecting the
// results of side (a or b) of the finding, or a script's stated results
// (corpus.ReadExpect, which says when the program cannot tell the sides
// apart: finalOnly).
func reproSource(path, side string) (src []byte, finalOnly string, err error) {
	f, e, finalOnly, err := corpus.ReadExpect(path, side)
	if err != nil {
		return nil, "", err
	}
	src, err = repro.Write(f.Script, repro.Options{Expect: e.Results, ExpectFrom: e.From, Notes: e.Notes})
	var un *repro.Unsupported
	if errors.As(err, &un) {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return src, finalOnly, err
}
