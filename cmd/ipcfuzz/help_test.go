package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// The synopsis of every command in 'ipcfuzz help' names every flag its flag
// set defines: a flag added without a word in the help fails here.
func TestHelpNamesEveryFlag(t *testing.T) {
	top := helpText(t, "help")
	for _, c := range cli.Commands() {
		require.Contains(t, top, c.Synopsis)
		text := helpText(t, append(strings.Fields(c.Name), "--help")...)
		flags := regexp.MustCompile(`(?m)^  --([a-z-]+)`).FindAllStringSubmatch(text, -1)
		require.NotEmpty(t, flags, c.Name)
		for _, f := range flags {
			name := "--" + f[1]
			if len(f[1]) == 1 { // a one-letter flag is written -o
				name = "-" + f[1] + " "
			}
			require.Contains(t, c.Synopsis, name, "%s: the synopsis does not name --%s", c.Name, f[1])
		}
	}
}

// 'ipcfuzz help ops' shows every operation of the spec table with its
// syntax and doc, and 'help workloads' every workload with its doc.
func TestHelpShowsEveryOperationAndWorkload(t *testing.T) {
	text := helpText(t, "help", "ops")
	for _, k := range ops.Specs() {
		require.NotEmpty(t, k.Doc, "kind %s has no doc", k.Name)
		require.Contains(t, text, "  "+k.Syntax()+"\n      "+k.Doc+"\n")
	}
	for _, s := range props.Names() {
		require.Contains(t, text, "\n"+s+":\n")
	}
	w := helpText(t, "help", "workloads")
	for _, name := range ops.Workloads {
		spec, err := ops.WorkloadOf(name)
		require.NoError(t, err)
		require.NotEmpty(t, spec.Doc)
		require.Contains(t, w, spec.Doc)
	}
}

func helpText(t *testing.T, args ...string) string {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	return out.String()
}
