package cli

import (
	"fmt"
	"slices"
	"strings"
)

// Command is one command of ipcfuzz: its name (one or two words), and its
// synopsis and doc for the help texts.
type Command struct {
	Name, Synopsis, Doc string
}

// CorpusUsage is the usage line of every corpus subcommand.
const CorpusUsage = "usage: ipcfuzz corpus merge DIR... | corpus minimize [DIR] | corpus import-fuzz FILE... --subsystem S"

// Commands are ipcfuzz's commands, in the order the help lists them: the
// one list that dispatch and help read. Each command's flags come from its
// own flag table (ipcfuzz help CMD).
func Commands() []Command {
	return []Command{
		{"compare", `ipcfuzz compare A B [--subsystem S] [--engine rapid|gopter|guided] [--checks N | --time D] [--seed S]
                    [--equiv exact|ids-renamed] [--jobs N] [--keep-going] [--stats]
                    [--format text|json|ktap|junit] [--json] [--corpus DIR] [--report FILE.html]
                    [--batch N] [--call-timeout D] [--in-process] [--known DIR|none]
                    [--cover DIR [--patch FILE.diff]]
                    [--perf [--metric NAME|A/B|wall] [--threshold E] [--sizes 8,16,32,64] [--reps N] [--workload FILE.perf]]`,
			"Draws scripts from the seed, runs them on A and B and compares every result and the final state;\na divergence is shrunk, printed and written under --corpus. With --perf, compares how their costs\ngrow on each script's repeated parts: B growing faster is a performance finding."},
		{"replay", `ipcfuzz replay FILE... [--impls A,B] [--equiv exact|ids-renamed] [--format text|json|ktap|junit] [--json]
                    [--call-timeout D] [--in-process] [--cover DIR [--patch FILE.diff]]`,
			"Runs each script on A and B, checks every result the file states and that A and B agree;\nreports every mismatching step."},
		{"complexity", `ipcfuzz complexity IMPL... --workload W|FILE.perf [--sizes 1k..32k | --sizes 1024,4096,...]
                    [--metric wall|counter|both] [--plot FILE.svg|FILE.png]
                    [--format table|json|benchstat] [--reps N] [--counter NAME|A/B]
                    [--call-timeout D] [--in-process]`,
			"Measures a workload inside each implementation at every size and fits the growth exponent."},
		{"worst", `ipcfuzz worst IMPL [--vs IMPL2] --subsystem S [--metric NAME|A/B|wall] [--budget D] [--seed S]
                    [--candidates N] [--sizes 128..512] [--report-sizes 128..1024] [--reps N] [--out corpus/perf]
                    [--fail-above E] [--json] [--call-timeout D] [--in-process]`,
			"Searches for the script pattern (setup, body repeated n times, measured tail) whose cost grows fastest\non IMPL, or against IMPL2; writes it, minimised, as a workload for complexity --workload FILE."},
		{"state", `ipcfuzz state FILE [--impl I] [--call-timeout D] [--in-process]`,
			"Prints FILE with the results implementation I gives stated after each step."},
		{"repro", `ipcfuzz repro FILE.ops [-o repro.c] [--expect a|b] [--run kernel:image=PATH|kernel:source=DIR[,patches=DIR]]`,
			"Writes a C reproducer of the script (libc only): run as root, it replays the script's syscalls in a\nprivate IPC namespace and exits 1 naming each step whose result is not side A's (or B's, or the stated one).\nWith --run, builds it and runs it in a guest of that kernel, exiting as it did (3: the guest did not run it)."},
		{"report", `ipcfuzz report FILE.ops... [-o report.html] [--plot FILE.svg] [--title T]`,
			"Writes findings as one static HTML page: both sides' results, the first divergence, the tasks' sleeps,\nthe final states and the commands that reproduce each."},
		{"corpus merge", `ipcfuzz corpus merge DIR... [--into corpus] [--tries N] [--summary FILE.md] [--date D] [--json]
                    [--call-timeout D] [--in-process]`,
			"Merges findings directories (compare's --corpus, nightly shards) into the corpus: each new script\nis replayed on its recorded pair, one script kept per signature; nothing committed is removed."},
		{"corpus minimize", `ipcfuzz corpus minimize [DIR] [--out EMPTYDIR] [--impls naive,optimized|kernel:image=VMLINUX,...] [--json]
                    [--call-timeout D] [--in-process]`,
			"Finds the corpus scripts that add no coverage: of the models, of a KCOV kernel side, or\nno new (operation, result class) pair (dry run unless --out is given)."},
		{"corpus import-fuzz", `ipcfuzz corpus import-fuzz FILE... --subsystem S [--impls A,B,...] [--corpus DIR] [--json]
                    [--call-timeout D] [--in-process]`,
			"Turns failing go test -fuzz inputs (testdata/fuzz/FuzzX/...) into signed corpus findings."},
		{"list", `ipcfuzz list [--subsystems | --shards [--json]]`,
			"Lists the built-in implementations with their subsystems and options, or the nightly shard table."},
	}
}

// Lookup finds the command args start with, and the arguments after its
// name.
func Lookup(args []string) (Command, []string, bool) {
	for _, c := range Commands() {
		words := strings.Fields(c.Name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, args[len(words):], true
		}
	}
	return Command{}, nil, false
}

// Header is the head of the help of the command name: its synopsis and
// doc ("" for a name of no command).
func Header(name string) string {
	for _, c := range Commands() {
		if c.Name == name {
			return fmt.Sprintf("%s\n\n%s\n\n", c.Synopsis, c.Doc)
		}
	}
	return ""
}

// Row is one line of a list of the top help: a name and what it is.
type Row struct{ Name, Text string }

// Lists are what the top help lists, from the tables the commands read.
type Lists struct {
	Subsystems, Ops    []Row
	Engines, Relations string
	Workloads, Impls   []string
}

// Usage is the top help text (ipcfuzz help): every command's synopsis,
// the lists, and what the exit statuses mean.
func Usage(l Lists) string {
	var b strings.Builder
	b.WriteString("ipcfuzz: differential fuzzing and complexity measurement of Linux IPC implementations\n\nUsage:\n")
	for _, c := range Commands() {
		fmt.Fprintf(&b, "  %s\n", c.Synopsis)
	}
	b.WriteString(`  ipcfuzz help [COMMAND | ops | workloads]

Subsystems (--subsystem):
`)
	for _, r := range l.Subsystems {
		fmt.Fprintf(&b, "  %-5s %s\n", r.Name, r.Text)
	}
	fmt.Fprintf(&b, "\nEngines: %s. Relations: %s.\n", l.Engines, l.Relations)
	b.WriteString("\nOperations of scripts (ipcfuzz help ops):\n")
	for _, r := range l.Ops {
		fmt.Fprintf(&b, "  %-5s %s\n", r.Name, r.Text)
	}
	b.WriteString("\nWorkloads (--workload; ipcfuzz help workloads):\n")
	for _, w := range l.Workloads {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	b.WriteString("\nImplementations: ")
	b.WriteString(strings.Join(l.Impls, ", "))
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
