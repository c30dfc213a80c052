package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// helpCmd prints the help of one command (its flags, from its flag set),
// of the script operations (from the spec table the parser reads) or of
// the workloads (from the workload table).
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	topic := strings.Join(args, " ")
	switch topic {
	case "ops":
		fmt.Fprint(stdout, ops.SpecsHelp(append(props.Names(), "tasks")))
		return nil
	case "workloads":
		fmt.Fprint(stdout, complexity.WorkloadsHelp())
		return nil
	}
	var names []string
	for _, c := range cli.Commands() {
		if c.Name == topic {
			if code := run(ctx, append(args, "--help"), stdout, stderr); code != 0 {
				return fmt.Errorf("help %s: exit %d", topic, code)
			}
			return nil
		}
		names = append(names, c.Name)
	}
	return cli.Usagef("no help on %q (have %s, ops, workloads)", topic, strings.Join(names, ", "))
}
