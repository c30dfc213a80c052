package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// stateCmd prints a script with the results one implementation gives
// stated after each step (runner.WriteStated).
func stateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var impl string
	var sf sideFlags
	sf.notes = stderr
	_, files, err := parse("state", args, []cli.Flag{
		cli.Opt("impl", "kernel", "the implementation whose results are stated", &impl),
	}, sf.flags(60*time.Second))
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
	s, info, err := sf.open(context.WithoutCancel(ctx), impl)
	if err != nil {
		return err
	}
	defer s.Impl.Close()
	if !slices.Contains(info.Subsystems, sub) {
		return cli.InputError{Err: fmt.Errorf("%s does not run subsystem %s (it runs %s)", s.Name, sub, strings.Join(info.Subsystems, ", "))}
	}
	err = runner.WriteStated(ctx, files[0], sub, s, stdout)
	if isFileError(err) {
		return cli.InputError{Err: err} // the file changed since it was checked
	}
	return err
}

// isFileError reports whether err is of a script file: it cannot be
// opened, or it does not parse.
func isFileError(err error) bool {
	var pe *ops.ParseError
	var pathErr *fs.PathError
	return errors.As(err, &pe) || errors.As(err, &pathErr)
}
