package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/sink"
)

// formatFlag is --format, and --json, its alias for --format json.
type formatFlag struct {
	name   string
	asJSON bool
}

func (f *formatFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "format", "text", "what to print on stdout: "+strings.Join(sink.Formats, ", ")+" (docs/formats.md)")
	fs.BoolVar(&f.asJSON, "json", false, "the same as --format json: end with one JSON object on stdout")
}

// format is the format asked for, or a usage error for one there is none
// of, or for --json beside another.
func (f *formatFlag) format() (string, error) {
	if !slices.Contains(sink.Formats, f.name) {
		return "", usageError{fmt.Sprintf("unknown format %q (want %s)", f.name, strings.Join(sink.Formats, ", "))}
	}
	if f.asJSON {
		if f.name != "text" && f.name != "json" {
			return "", usageError{fmt.Sprintf("--json is --format json, not --format %s", f.name)}
		}
		return "json", nil
	}
	return f.name, nil
}
