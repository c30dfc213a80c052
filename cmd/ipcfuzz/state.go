package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// stateCmd prints a script with the results one implementation gives
// stated after each step (runner.WriteStated).
func stateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var impl string
	var sf sides.Flags
	sf.Notes = stderr
	_, files, err := parse("state", args, []cli.Flag{
		cli.Opt("impl", "kernel", "the implementation whose results are stated", &impl),
	}, sf.Rows(60*time.Second))
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return cli.UsageError{Msg: "state needs one script file"}
	}
	sub, err := runner.CheckScript(files[0])
	if err != nil {
		return cli.InputError{Err: err}
	}
	s, err := sf.Open(context.WithoutCancel(ctx), impl)
	if err != nil {
		return err
	}
	defer s.Impl.Close()
	if !slices.Contains(s.Info.Subsystems, sub) {
		return cli.InputError{Err: fmt.Errorf("%s does not run subsystem %s (it runs %s)", s.Name, sub, strings.Join(s.Info.Subsystems, ", "))}
	}
	// A file that changed since it was checked fails here, one line, exit
	// 2, as any error of the file.
	return runner.WriteStated(ctx, files[0], sub, s, stdout)
}
