// Command ipcfuzz compares two implementations of Linux IPC logic: do they
// behave the same, and how does their cost grow? `ipcfuzz help` lists its
// commands, subsystems, workloads and implementations, all read from the
// tables the parser and the registry use.
//
// Implementations are built-in names (naive, optimized, kernel), optionally
// with options (naive:alloc=legacy), or the path of any executable that
// speaks the ipcfuzz plugin handshake (./my-model). Built-ins run as plugin
// processes of this same binary ("ipcfuzz plugin serve NAME").
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

func main() {
	if impls.IsGuestInit() { // /init of a guest booted for kernel:image=
		impls.GuestInit()
	}
	stopProfile := startProfile(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	stopProfile()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return cli.ExitUsage
	}
	var err error
	switch args[0] {
	case "plugin":
		err = pluginCmd(args[1:])
	case "help", "-h", "--help":
		if len(args) < 2 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		err = helpCmd(ctx, args[1:], stdout, stderr)
	case "corpus":
		err = cli.UsageError{Msg: cli.CorpusUsage}
		if len(args) > 1 {
			err = cli.Usagef("unknown corpus command %q (%s)", args[1], cli.CorpusUsage)
		}
	default:
		err = cli.Usagef("unknown command %q", args[0])
	}
	if c, rest, ok := cli.Lookup(args); ok {
		err = runners()[c.Name](ctx, rest, stdout, stderr)
	}
	return cli.Exit(err, stdout, stderr)
}

// commandFunc runs one command of cli.Commands.
type commandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// runners are what runs each command of cli.Commands, by name.
func runners() map[string]commandFunc {
	return map[string]commandFunc{
		"compare": compareCmd, "replay": replayCmd, "complexity": complexityCmd, "worst": worstCmd,
		"state": stateCmd, "repro": reproCmd, "report": reportCmd, "corpus import-fuzz": importFuzzCmd,
		"corpus merge": mergeCmd, "corpus minimize": minimizeCmd, "list": listCmd,
	}
}

// parse parses args against the flag tables of the command name (of
// cli.Commands), whose synopsis and doc head its help.
func parse(name string, args []string, tables ...[]cli.Flag) (*flag.FlagSet, []string, error) {
	return cli.Parse(name, cli.Header(name), args, tables...)
}

// usage is the help text, listing what the registry and the tables hold.
func usage() string {
	l := cli.Lists{Engines: strings.Join(engine.Engines, ", "), Relations: equiv.Alternatives(equiv.Relations), Impls: impls.Names()}
	for _, s := range props.Subsystems() {
		l.Subsystems = append(l.Subsystems, cli.Row{Name: s.Name, Text: fmt.Sprintf("%s (%s)", s.Doc, equiv.Alternatives(s.Relations))})
	}
	for _, sub := range append(props.Names(), "tasks") {
		l.Ops = append(l.Ops, cli.Row{Name: sub, Text: strings.Join(ops.KindNames(sub), ", ")})
	}
	for _, w := range ops.Workloads {
		l.Workloads = append(l.Workloads, string(w))
	}
	return cli.Usage(l)
}
