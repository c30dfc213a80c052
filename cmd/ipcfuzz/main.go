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
	"slices"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
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
		err = cli.UsageError{Msg: corpusUsage}
		if len(args) > 1 {
			err = cli.Usagef("unknown corpus command %q (%s)", args[1], corpusUsage)
		}
	default:
		err = cli.Usagef("unknown command %q", args[0])
	}
	if c, rest, ok := lookupCommand(args); ok {
		err = c.run(ctx, rest, stdout, stderr)
	}
	return cli.Exit(err, stdout, stderr)
}

// command is one command of the CLI: its name (one or two words), its
// synopsis and doc for the help texts, and what runs it.
type command struct {
	name, synopsis, doc string
	run                 func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// lookupCommand finds the command args start with, and the arguments after
// its name.
func lookupCommand(args []string) (command, []string, bool) {
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, args[len(words):], true
		}
	}
	return command{}, nil, false
}

// parse parses args against the flag tables of the command name (a name
// of commands()), whose synopsis and doc head its help.
func parse(name string, args []string, tables ...[]cli.Flag) (*flag.FlagSet, []string, error) {
	header := ""
	for _, c := range commands() {
		if c.name == name {
			header = fmt.Sprintf("%s\n\n%s\n\n", c.synopsis, c.doc)
		}
	}
	return cli.Parse(name, header, args, tables...)
}

// corpusUsage is the usage line of every corpus subcommand.
const corpusUsage = "usage: ipcfuzz corpus merge DIR... | corpus minimize [DIR] | corpus import-fuzz FILE... --subsystem S"

// commands are the CLI's commands, in the order the help lists them: the
// one list that dispatch and help read. Each command's flags come from its
// own flag set (ipcfuzz help CMD).
func commands() []command {
	return []command{
		{"compare", `ipcfuzz compare A B [--subsystem S] [--engine rapid|gopter] [--checks N | --time D] [--seed S]
                    [--equiv exact|ids-renamed] [--jobs N] [--keep-going] [--stats]
                    [--format text|json|ktap|junit] [--json] [--corpus DIR] [--report FILE.html]
                    [--batch N] [--call-timeout D] [--in-process] [--known DIR|none]
                    [--cover DIR [--patch FILE.diff]]
                    [--perf [--metric NAME|A/B|wall] [--threshold E] [--sizes 8,16,32,64] [--reps N] [--workload FILE.perf]]`,
			"Draws scripts from the seed, runs them on A and B and compares every result and the final state;\na divergence is shrunk, printed and written under --corpus. With --perf, compares how their costs\ngrow on each script's repeated parts: B growing faster is a performance finding.", compareCmd},
		{"replay", `ipcfuzz replay FILE... [--impls A,B] [--equiv exact|ids-renamed] [--format text|json|ktap|junit] [--json]
                    [--call-timeout D] [--in-process]`,
			"Runs each script on A and B, checks every result the file states and that A and B agree;\nreports every mismatching step.", replayCmd},
		{"complexity", `ipcfuzz complexity IMPL... --workload W|FILE.perf [--sizes 1k..32k | --sizes 1024,4096,...]
                    [--metric wall|counter|both] [--plot FILE.svg|FILE.png]
                    [--format table|json|benchstat] [--reps N] [--counter NAME|A/B]
                    [--call-timeout D] [--in-process]`,
			"Measures a workload inside each implementation at every size and fits the growth exponent.", complexityCmd},
		{"worst", `ipcfuzz worst IMPL [--vs IMPL2] --subsystem S [--metric NAME|A/B|wall] [--budget D] [--seed S]
                    [--candidates N] [--sizes 128..512] [--report-sizes 128..1024] [--reps N] [--out corpus/perf]
                    [--fail-above E] [--json] [--call-timeout D] [--in-process]`,
			"Searches for the script pattern (setup, body repeated n times, measured tail) whose cost grows fastest\non IMPL, or against IMPL2; writes it, minimised, as a workload for complexity --workload FILE.", worstCmd},
		{"state", `ipcfuzz state FILE [--impl I] [--call-timeout D] [--in-process]`,
			"Prints FILE with the results implementation I gives stated after each step.", stateCmd},
		{"repro", `ipcfuzz repro FILE.ops [-o repro.c] [--expect a|b] [--run kernel:image=PATH|kernel:source=DIR[,patches=DIR]]`,
			"Writes a C reproducer of the script (libc only): run as root, it replays the script's syscalls in a\nprivate IPC namespace and exits 1 naming each step whose result is not side A's (or B's, or the stated one).\nWith --run, builds it and runs it in a guest of that kernel, exiting as it did (3: the guest did not run it).", reproCmd},
		{"report", `ipcfuzz report FILE.ops... [-o report.html] [--plot FILE.svg] [--title T]`,
			"Writes findings as one static HTML page: both sides' results, the first divergence, the tasks' sleeps,\nthe final states and the commands that reproduce each.", reportCmd},
		{"corpus merge", `ipcfuzz corpus merge DIR... [--into corpus] [--tries N] [--summary FILE.md] [--date D] [--json]
                    [--call-timeout D] [--in-process]`,
			"Merges findings directories (compare's --corpus, nightly shards) into the corpus: each new script\nis replayed on its recorded pair, one script kept per signature; nothing committed is removed.",
			func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				return mergeCmd(ctx, args, stdout)
			}},
		{"corpus minimize", `ipcfuzz corpus minimize [DIR] [--out EMPTYDIR] [--impls naive,optimized] [--json]`,
			"Finds the corpus scripts that add no model coverage (dry run unless --out is given).",
			func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				return minimizeCmd(ctx, args, stdout)
			}},
		{"corpus import-fuzz", `ipcfuzz corpus import-fuzz FILE... --subsystem S [--impls A,B,...] [--corpus DIR] [--json]
                    [--call-timeout D] [--in-process]`,
			"Turns failing go test -fuzz inputs (testdata/fuzz/FuzzX/...) into signed corpus findings.", importFuzzCmd},
		{"list", `ipcfuzz list [--subsystems | --shards [--json]]`,
			"Lists the built-in implementations with their subsystems and options, or the nightly shard table.",
			func(_ context.Context, args []string, stdout, _ io.Writer) error { return listCmd(args, stdout) }},
	}
}

// usage is the help text, built from the tables the commands use.
func usage() string {
	var b strings.Builder
	b.WriteString("ipcfuzz: differential fuzzing and complexity measurement of Linux IPC implementations\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %s\n", c.synopsis)
	}
	b.WriteString(`  ipcfuzz help [COMMAND | ops | workloads]

Subsystems (--subsystem):
`)
	for _, s := range props.Subsystems() {
		fmt.Fprintf(&b, "  %-5s %s (%s)\n", s.Name, s.Doc, relationNames(s.Relations))
	}
	fmt.Fprintf(&b, "\nEngines: %s. Relations: %s.\n", strings.Join(engine.Engines, ", "), relationNames(equiv.Relations))
	b.WriteString("\nOperations of scripts (ipcfuzz help ops):\n")
	for _, sub := range append(props.Names(), "tasks") {
		fmt.Fprintf(&b, "  %-5s %s\n", sub, strings.Join(ops.KindNames(sub), ", "))
	}
	b.WriteString("\nWorkloads (--workload; ipcfuzz help workloads):\n")
	for _, w := range ops.Workloads {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	b.WriteString("\nImplementations: ")
	b.WriteString(strings.Join(impls.Names(), ", "))
	b.WriteString(`, with options as name:key=value,...
(naive:alloc=legacy; 'ipcfuzz list' shows each one's), or the path of a plugin executable
(./my-model).

Exit status: 0 nothing found, 1 a divergence or a failing plugin was found,
2 a bad command line, a bad input file or a setup failure (a findings
directory that cannot be written, a kernel side that cannot run here),
3 nothing found but an infrastructure event (a side killed from outside
whose scripts did not fail again on a fresh plugin, alone; no finding file
is written), 130 interrupted (SIGINT or SIGTERM) before anything was found;
what was compared until then is summarized and every finding is kept.
`)
	return b.String()
}
