package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// stateCmd runs a script on one implementation and prints it with every
// result stated ("-> ..."): how a corpus seed gets its expectations, from
// the kernel, before a person checks them. A long script is streamed: read,
// run and written a chunk at a time.
func stateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("state", flag.ContinueOnError)
	impl := fs.String("impl", "kernel", "the implementation whose results are stated")
	var sf sideFlags
	sf.notes = stderr
	sf.register(fs, 60*time.Second)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"state needs one script file"}
	}
	sub, err := checkScript(files[0])
	if err != nil {
		return inputError{err}
	}
	s, info, err := sf.open(context.WithoutCancel(ctx), *impl)
	if err != nil {
		return err
	}
	defer s.Impl.Close()
	if !slices.Contains(info.Subsystems, sub) {
		return inputError{fmt.Errorf("%s does not run subsystem %s (it runs %s)", s.Name, sub, strings.Join(info.Subsystems, ", "))}
	}
	f, err := os.Open(files[0])
	if err != nil {
		return inputError{err}
	}
	defer f.Close()
	// The script is read, run and written out a chunk at a time; the
	// subsystem line waits for the first results, so that nothing is
	// written when the script cannot run.
	out := bufio.NewWriter(stdout)
	started := false
	_, err = runner.RunSteps(ctx, ops.NewScriptReader(files[0], f), s, 0, func(st ops.Step, r ops.Result) error {
		if !started {
			fmt.Fprintf(out, "subsystem %s\n", sub)
			started = true
		}
		r.Alternatives = 0
		st.Want = &r
		_, err := fmt.Fprintln(out, ops.FormatStep(st))
		return err
	})
	var pe *ops.ParseError
	switch {
	case errors.As(err, &pe):
		return inputError{err} // the file changed since it was checked
	case err != nil:
		return fmt.Errorf("%s: %w", *impl, err)
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}
