package ops

import (
	"fmt"
	"strings"
)

// KindNames are the names of subsystem's operations, in the spec table's
// order.
func KindNames(subsystem string) []string {
	var names []string
	for _, k := range Specs() {
		if k.Subsystem == subsystem {
			names = append(names, k.Name)
		}
	}
	return names
}

// SpecsHelp is the syntax and doc of every operation of the spec table,
// by subsystem (in the order given): the text of 'ipcfuzz help ops'.
func SpecsHelp(subsystems []string) string {
	var b strings.Builder
	b.WriteString(`A script is a "subsystem NAME" line, then one operation a line, each optionally followed by
"-> RESULT", the result it must give; "#" starts a comment. Handles: hN names the IPC object an
operation bound ("h1 = get ..."), aN an shm attachment, fN a file; id=N is a literal id.
task=tN picks the task (t0, the default, never sleeps; t1..t15 may block), as=U runs the operation as
uid/gid U without capabilities. Results: ok, an errno name (EINVAL), blocked, id=N, a listing
[...], a row {...}, or fields (ret=N name=V...); completions of sleepers follow as "; tN RESULT".

`)
	for _, sub := range subsystems {
		fmt.Fprintf(&b, "%s:\n", sub)
		for _, k := range Specs() {
			if k.Subsystem == sub {
				fmt.Fprintf(&b, "  %s\n      %s\n", k.Syntax(), k.Doc)
			}
		}
	}
	return b.String()
}
