package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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
		if t, ok := f.Value.(interface{ typeName() string }); ok {
			name = t.typeName()
		}
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

// positiveInt is an integer flag that refuses 0 and negative values when
// given: a count of nothing is a mistake, not a request for the default
// (the variable keeps its zero, "not given", otherwise).
type positiveInt struct{ p *int }

func (v positiveInt) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (positiveInt) typeName() string { return "int" }

func (v positiveInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < 1 {
		return errors.New("must be at least 1")
	}
	*v.p = int(n)
	return nil
}

// positiveDuration is a duration flag that refuses 0 and negative values
// when given: a timeout or a run time of nothing would mean "none" or
// "the default" silently.
type positiveDuration struct{ p *time.Duration }

func (v positiveDuration) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (positiveDuration) typeName() string { return "duration" }

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (such as 30s or 2m)")
	}
	if d <= 0 {
		return errors.New("must be more than 0")
	}
	*v.p = d
	return nil
}
