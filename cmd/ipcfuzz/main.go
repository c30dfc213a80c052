// Command ipcfuzz compares two implementations of Linux IPC logic: do they
// behave the same, and how does their cost grow?
//
//	ipcfuzz compare A B [--subsystem ids] [--engine rapid|gopter] [--checks N | --time D]
//	                    [--seed S] [--equiv exact|ids-renamed] [--json]
//	ipcfuzz replay FILE... [--impls A,B] [--equiv R]
//	ipcfuzz complexity IMPL... --workload W [--sizes 1k..32k] [--metric wall|counter|both]
//	                    [--plot FILE.svg|FILE.png] [--format table|json|benchstat]
//	ipcfuzz list
//
// Implementations are built-in names (naive, optimized, kernel), optionally
// with options (naive:alloc=legacy), or the path of any executable that
// speaks the ipcfuzz plugin handshake (./my-model). Built-ins run as plugin
// processes of this same binary ("ipcfuzz plugin serve NAME").
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitUsage is the exit code for bad command lines and setup failures; 1 means
// something was found (a divergence or a failing plugin).
const (
	exitFound = 1
	exitUsage = 2
)

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// foundError means the command ran and found something: exit 1.
type foundError struct{ msg string }

func (e foundError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "compare":
		err = compareCmd(ctx, args[1:], stdout, stderr)
	case "replay":
		err = replayCmd(ctx, args[1:], stdout, stderr)
	case "complexity":
		err = complexityCmd(ctx, args[1:], stdout, stderr)
	case "list":
		err = listCmd(ctx, stdout)
	case "plugin":
		err = pluginCmd(args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	var ue usageError
	var fe foundError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
		return exitFound
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ipcfuzz: %v (see 'ipcfuzz help')\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
		return exitUsage
	}
}

const usage = `ipcfuzz: differential fuzzing and complexity measurement of Linux IPC implementations

Usage:
  ipcfuzz compare A B [--subsystem ids] [--engine rapid|gopter] [--checks N | --time D]
                      [--seed S] [--equiv exact|ids-renamed] [--json] [--corpus DIR]
  ipcfuzz replay FILE... [--impls A,B] [--equiv exact|ids-renamed]
  ipcfuzz complexity IMPL... --workload W [--sizes 1k..32k | --sizes 1024,4096,...]
                      [--metric wall|counter|both] [--plot FILE.svg|FILE.png]
                      [--format table|json|benchstat] [--reps N]
  ipcfuzz list

Workloads: proc-read-shm, proc-read-msg, proc-read-sem, proc-read-sparse,
alloc-churn, lookup-depth.

Implementations: naive, optimized, kernel, with options as name:key=value,...
(naive:alloc=legacy), or the path of a plugin executable (./my-model).

Exit status: 0 nothing found, 1 a divergence or a failing plugin was found,
2 a bad command line or a setup failure.
`
