package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// stateCmd prints a script with the results one implementation gives
// stated after each step (runner.WriteStated).
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
	err = runner.WriteStated(ctx, files[0], sub, s, stdout)
	if isFileError(err) {
		return inputError{err} // the file changed since it was checked
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
