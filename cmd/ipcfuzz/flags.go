package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpError is a request for a command's help (-h, --help): its text goes
// to stdout and the exit status is 0.
type helpError struct{ text string }

func (e helpError) Error() string { return e.text }

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpError{commandHelp(fs)}
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// commandHelp is a command's synopsis (from the commands table) and every
// flag of its flag set with its usage and default.
func commandHelp(fs *flag.FlagSet) string {
	var b strings.Builder
	for _, c := range commands() {
		if c.name == fs.Name() {
			fmt.Fprintf(&b, "%s\n\n%s\n\n", c.synopsis, c.doc)
		}
	}
	b.WriteString("Flags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + strings.ToUpper(name)
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(&b, "  %-22s %s%s\n", arg, usage, def)
	})
	return b.String()
}
