package sides

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// Flags are what the command line of every command that opens
// implementations says of opening them (--call-timeout, --in-process),
// and where what a side says it cannot do here is printed. Its methods
// return the errors of opening as the command line's (ExitError).
type Flags struct {
	CallTimeout time.Duration
	InProcess   bool
	// Notes, when set, is where what an implementation says it cannot do
	// here (ops.Info.Notes) is printed, once per side opened, and where a
	// kernel build says what it does (Options.BuildLog).
	Notes io.Writer
}

// Rows are the flag table's rows of --call-timeout (timeout by default)
// and --in-process.
func (f *Flags) Rows(timeout time.Duration) []cli.Flag {
	return []cli.Flag{
		cli.Positive("call-timeout", timeout, "deadline of one plugin call", &f.CallTimeout),
		cli.Opt("in-process", nil, "run built-in implementations inside this process", &f.InProcess),
	}
}

// Options are the options sides are opened with.
func (f *Flags) Options() Options {
	return Options{CallTimeout: f.CallTimeout, InProcess: f.InProcess, BuildLog: f.Notes}
}

// Open starts the implementation spec names (Open): a built-in served by
// this binary (or inside this process with --in-process), or an
// executable given by path. A spec that names nothing is a usage error.
func (f *Flags) Open(ctx context.Context, spec string) (runner.Side, error) {
	s, err := Open(ctx, spec, f.Options())
	if err == nil {
		WriteNotes(f.Notes, s)
	}
	return s, ExitError(err)
}

// OpenAll opens each spec in turn (Flags.Open); closeAll closes those
// opened, whatever failed, last first.
func (f *Flags) OpenAll(ctx context.Context, specs ...string) (ss []runner.Side, closeAll func(), err error) {
	closeAll = func() {
		for i := len(ss) - 1; i >= 0; i-- {
			_ = ss[i].Impl.Close()
		}
	}
	for _, spec := range specs {
		s, err := f.Open(ctx, spec)
		if err != nil {
			return ss, closeAll, err
		}
		ss = append(ss, s)
	}
	return ss, closeAll, nil
}

// OpenPair opens a and b as the pair that compares subsystem's scripts
// under rel (OpenPair), checking invariant of every final state.
func (f *Flags) OpenPair(ctx context.Context, a, b, subsystem string, rel equiv.Relation, invariant func(ops.Snapshot) error) (*runner.Pair, func(), error) {
	p, closeAll, err := OpenPair(ctx, a, b, subsystem, rel, f.Options())
	if err != nil {
		return nil, nil, ExitError(err)
	}
	p.Invariant = invariant
	WriteNotes(f.Notes, p.A, p.B)
	return p, closeAll, nil
}

// OpenPairs opens n pairs of a and b (one per job of a run): the first
// one's sides print their notes, the others' none; each pair is given to
// attach (nil: none). closeAll closes those opened, whatever failed.
func (f *Flags) OpenPairs(ctx context.Context, n int, a, b, subsystem string, rel equiv.Relation, invariant func(ops.Snapshot) error, attach func(*runner.Pair)) (pairs []*runner.Pair, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	notes := f.Notes
	defer func() { f.Notes = notes }()
	for i := range n {
		if i > 0 {
			f.Notes = nil
		}
		p, closePair, err := f.OpenPair(ctx, a, b, subsystem, rel, invariant)
		if err != nil {
			return pairs, closeAll, err
		}
		closers = append(closers, closePair)
		if attach != nil {
			attach(p)
		}
		pairs = append(pairs, p)
	}
	return pairs, closeAll, nil
}

// ExitError makes the errors of opening sides that are the user's to fix
// usage errors (exit 2), and a guest that twice did not come up or answer
// an infrastructure event (exit 3).
func ExitError(err error) error {
	var nr *runner.NotRunError
	switch {
	case err == nil:
		return nil
	case IsSpecError(err):
		return cli.UsageError{Msg: err.Error()}
	case errors.As(err, &nr):
		return cli.Usagef("%s does not implement subsystem %s (it has %s)", nr.Side, nr.Subsystem, strings.Join(nr.Runs, ", "))
	case errors.Is(err, host.ErrInfrastructure):
		// The machine's trouble, nothing found.
		return cli.InfrastructureError{Msg: err.Error()}
	}
	return err
}
