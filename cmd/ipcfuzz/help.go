package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// helpCmd prints the help of one command (its flags, from its flag set),
// of the script operations (from the spec table the parser reads) or of
// the workloads (from the workload table).
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	topic := strings.Join(args, " ")
	switch topic {
	case "ops":
		fmt.Fprint(stdout, opsHelp())
		return nil
	case "workloads":
		fmt.Fprint(stdout, workloadsHelp())
		return nil
	}
	for _, c := range commands() {
		if c.name == topic {
			code := run(ctx, append(args, "--help"), stdout, stderr)
			if code != 0 {
				return fmt.Errorf("help %s: exit %d", topic, code)
			}
			return nil
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return usageError{fmt.Sprintf("no help on %q (have %s, ops, workloads)", topic, strings.Join(names, ", "))}
}

// opsHelp is the syntax of every operation, by subsystem, from the spec
// table.
func opsHelp() string {
	var b strings.Builder
	b.WriteString(`A script is a "subsystem NAME" line, then one operation a line, each optionally followed by
"-> RESULT", the result it must give; "#" starts a comment. Handles: hN names the IPC object an
operation bound ("h1 = get ..."), aN an shm attachment, fN a file; id=N is a literal id.
task=tN picks the task (t0, the default, never sleeps; t1..t15 may block), as=U runs the operation as
uid/gid U without capabilities. Results: ok, an errno name (EINVAL), blocked, id=N, a listing
[...], a row {...}, or fields (ret=N name=V...); completions of sleepers follow as "; tN RESULT".

`)
	for _, sub := range append(props.Names(), "tasks") {
		fmt.Fprintf(&b, "%s:\n", sub)
		for _, k := range ops.Specs() {
			if k.Subsystem == sub {
				fmt.Fprintf(&b, "  %s\n      %s\n", k.Syntax(), k.Doc)
			}
		}
	}
	return b.String()
}

// workloadsHelp lists every workload with its subsystem, default sizes and
// what it measures.
func workloadsHelp() string {
	var b strings.Builder
	b.WriteString("Workloads (ipcfuzz complexity IMPL... --workload W; sizes default to the workload's):\n")
	for _, w := range ops.Workloads {
		spec, _ := ops.WorkloadOf(w)
		fmt.Fprintf(&b, "  %-17s %-4s sizes %-22s %s\n", w, spec.Subsystem, spec.Sizes, spec.Doc)
	}
	fmt.Fprintf(&b, `
or a pattern file (--workload FILE.perf, sizes %s): a script with a body repeated n times and a
measured tail, as ipcfuzz worst writes them under corpus/perf/:
  subsystem shm
  repeat n {
  get shm key=0x0 mode=0600 size=1
  }
  measure
  list shm
`, complexity.DefaultPatternSizes)
	return b.String()
}
