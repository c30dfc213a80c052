// Package sink writes what a run tells (runner.Sink) in one of the output
// formats of compare and replay: the text summary people read, one JSON
// object, KTAP (what the kernel's kselftest and KUnit speak, for its
// tools and CI) or JUnit XML (for CI dashboards).
//
// KTAP and JUnit report one test per finding (a signature: a divergence
// or a plugin failure, with its hits and its finding file), one skipped
// test per signature a known difference of the kernels' versions
// explained, and a last test for the run itself, which fails only when
// the run did not finish its checks (an infrastructure event, an error).
// Thousands of agreeing scripts are counted in that last test's
// diagnostics rather than listed. A replay reports one test per file.
package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// Formats are the names New takes, the default first.
var Formats = []string{"text", "json", "ktap", "junit"}

// Writer is a sink that writes, and keeps the first error it met writing.
type Writer interface {
	runner.Sink
	// Err is the first write that failed, or nil.
	Err() error
}

// New returns the sink of a format: it writes its output on out and what
// people read beside a machine's output (the findings, as they come, of
// the json format) on notes.
func New(format string, out, notes io.Writer) (Writer, error) {
	o, n := &output{w: out}, &output{w: notes}
	switch format {
	case "text":
		return &text{out: o}, nil
	case "json":
		return &jsonSink{out: o, notes: n}, nil
	case "ktap":
		return &ktap{out: o, texts: map[string]string{}}, nil
	case "junit":
		return &junit{out: o, texts: map[string]string{}}, nil
	}
	return nil, fmt.Errorf("unknown format %q (want %s)", format, formatList())
}

// formatList is "text, json, ktap or junit".
func formatList() string {
	return strings.Join(Formats[:len(Formats)-1], ", ") + " or " + Formats[len(Formats)-1]
}

// output is a writer that keeps its first error and writes nothing after
// it.
type output struct {
	w   io.Writer
	err error
}

func (o *output) printf(format string, args ...any) {
	if o.err == nil && o.w != nil {
		_, o.err = fmt.Fprintf(o.w, format, args...)
	}
}

func (o *output) print(s string) {
	if o.err == nil && o.w != nil {
		_, o.err = io.WriteString(o.w, s)
	}
}

// SideLabel is a side's name as the user wrote it and, for a kernel side,
// the release that actually ran ("kernel:image=x.deb [Linux 6.1.0-57]"):
// a summary says what was compared, not only what was asked for.
func SideLabel(name, release string) string { return runner.SideLabel(name, release) }
