package sides

import (
	"fmt"
	"io"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// WriteNotes writes what each side says it cannot do here (ops.Info.Notes),
// one line a note; nothing when w is nil.
func WriteNotes(w io.Writer, ss ...runner.Side) {
	if w == nil {
		return
	}
	for _, s := range ss {
		for _, n := range s.Info.Notes {
			fmt.Fprintf(w, "ipcfuzz: %s: %s\n", s.Name, n)
		}
	}
}
