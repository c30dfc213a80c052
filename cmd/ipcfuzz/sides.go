package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// sideFlags are the flags every command that opens implementations takes.
type sideFlags struct {
	callTimeout time.Duration
	inProcess   bool
	// notes, when set, is where what an implementation says it cannot do
	// here (ops.Info.Notes) is printed, once per side opened.
	notes io.Writer
}

// flags are the rows of --call-timeout (timeout by default) and
// --in-process.
func (f *sideFlags) flags(timeout time.Duration) []cli.Flag {
	return []cli.Flag{
		cli.Positive("call-timeout", timeout, "deadline of one plugin call", &f.callTimeout),
		cli.Opt("in-process", nil, "run built-in implementations inside this process", &f.inProcess),
	}
}

func (f *sideFlags) options() sides.Options {
	return sides.Options{CallTimeout: f.callTimeout, InProcess: f.inProcess, BuildLog: f.notes}
}

// open starts the implementation spec names (sides.Open): a built-in
// served by this binary (or inside this process with --in-process), or an
// executable given by path. A spec that names nothing is a usage error.
func (f *sideFlags) open(ctx context.Context, spec string) (runner.Side, ops.Info, error) {
	s, err := sides.Open(ctx, spec, f.options())
	if err == nil {
		f.printNotes(s)
	}
	return s, s.Info, cliError(err)
}

func (f *sideFlags) printNotes(sides ...runner.Side) {
	if f.notes == nil {
		return
	}
	for _, s := range sides {
		for _, n := range s.Info.Notes {
			fmt.Fprintf(f.notes, "ipcfuzz: %s: %s\n", s.Name, n)
		}
	}
}

// openPair opens a and b as the pair that compares sub's scripts under
// rel, with sub's invariant (sides.OpenPair).
func (f *sideFlags) openPair(ctx context.Context, a, b string, sub engine.Subsystem, rel equiv.Relation) (*runner.Pair, func(), error) {
	p, closeAll, err := sides.OpenPair(ctx, a, b, sub.Name, rel, f.options())
	if err != nil {
		return nil, nil, cliError(err)
	}
	p.Invariant = sub.Invariant
	f.printNotes(p.A, p.B)
	return p, closeAll, nil
}

// cliError makes the errors of opening sides that are the user's to fix
// usage errors.
func cliError(err error) error {
	var nr *runner.NotRunError
	switch {
	case err == nil:
		return nil
	case sides.IsSpecError(err):
		return cli.UsageError{Msg: err.Error()}
	case errors.As(err, &nr):
		return cli.Usagef("%s does not implement subsystem %s (it has %s)", nr.Side, nr.Subsystem, strings.Join(nr.Runs, ", "))
	case errors.Is(err, host.ErrInfrastructure):
		// A guest that twice did not come up or answer: the machine's
		// trouble, nothing found (exit 3).
		return cli.InfrastructureError{Msg: err.Error()}
	}
	return err
}
