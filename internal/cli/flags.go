package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is how a flag's value is read: as its target's type, or as a
// positive count or duration.
type Kind int

const (
	// Plain reads the value as the target's type (*string, *bool, *int,
	// *uint64, *float64, *time.Duration).
	Plain Kind = iota
	// MoreThanZero reads an integer (*int) or a duration (*time.Duration)
	// that must be more than 0 when given: a count or a timeout of nothing
	// is a mistake, not a request for the default.
	MoreThanZero
)

// Flag is one row of a command's flag table: its name, how its value is
// read, its default (nil: the zero value), its usage and the variable it
// sets.
type Flag struct {
	Name  string
	Kind  Kind
	Def   any
	Usage string
	To    any
}

// Opt is the row of a flag read as the type to points to (*string, *bool,
// *int, *uint64, *float64 or *time.Duration), def its default of that
// type (nil: the zero value).
func Opt(name string, def any, usage string, to any) Flag {
	return Flag{Name: name, Kind: Plain, Def: def, Usage: usage, To: to}
}

// Positive is the row of an integer (*int) or duration (*time.Duration)
// flag refused when given as 0 or less: "invalid value ... must be at
// least 1" or "must be more than 0".
func Positive(name string, def any, usage string, to any) Flag {
	return Flag{Name: name, Kind: MoreThanZero, Def: def, Usage: usage, To: to}
}

// Parse registers the rows of tables on a flag set named name, parses args
// (flags may come before, between or after the positional arguments) and
// returns the set and the positional arguments. -h or --help is a
// HelpError of header and every flag; a bad flag or value is a UsageError.
func Parse(name, header string, args []string, tables ...[]Flag) (*flag.FlagSet, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range slices.Concat(tables...) {
		register(fs, f)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, HelpError{header + flagsHelp(fs)}
			}
			return nil, nil, UsageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return fs, pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// register defines f on fs.
func register(fs *flag.FlagSet, f Flag) {
	switch p := f.To.(type) {
	case *string:
		fs.StringVar(p, f.Name, def[string](f), f.Usage)
	case *bool:
		fs.BoolVar(p, f.Name, def[bool](f), f.Usage)
	case *uint64:
		fs.Uint64Var(p, f.Name, def[uint64](f), f.Usage)
	case *float64:
		fs.Float64Var(p, f.Name, def[float64](f), f.Usage)
	case *int:
		if f.Kind == MoreThanZero {
			*p = def[int](f)
			fs.Var(positiveInt{p}, f.Name, f.Usage)
			return
		}
		fs.IntVar(p, f.Name, def[int](f), f.Usage)
	case *time.Duration:
		if f.Kind == MoreThanZero {
			*p = def[time.Duration](f)
			fs.Var(positiveDuration{p}, f.Name, f.Usage)
			return
		}
		fs.DurationVar(p, f.Name, def[time.Duration](f), f.Usage)
	default:
		panic(fmt.Sprintf("cli: flag --%s: no kind of flag sets a %T", f.Name, f.To))
	}
}

// def is f's default as a T: the zero T when it has none.
func def[T any](f Flag) T {
	if f.Def == nil {
		var zero T
		return zero
	}
	v, ok := f.Def.(T)
	if !ok {
		panic(fmt.Sprintf("cli: flag --%s: default %v is not a %T", f.Name, f.Def, v))
	}
	return v
}

// Given reports whether the flag name was set on the command line.
func Given(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// flagsHelp is every flag of fs with its usage and default.
func flagsHelp(fs *flag.FlagSet) string {
	var b strings.Builder
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
// given (the variable keeps its default otherwise).
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

// Format is --format, and --json, its alias for --format json.
type Format struct {
	name    string
	asJSON  bool
	formats []string
}

// Flags are the rows of --format (one of formats, text by default) and
// --json.
func (f *Format) Flags(formats []string) []Flag {
	f.formats = formats
	return []Flag{
		Opt("format", "text", "what to print on stdout: "+strings.Join(formats, ", ")+" (docs/formats.md)", &f.name),
		Opt("json", nil, "the same as --format json: end with one JSON object on stdout", &f.asJSON),
	}
}

// Value is the format asked for, or a usage error for one there is none
// of, or for --json beside another.
func (f *Format) Value() (string, error) {
	if !slices.Contains(f.formats, f.name) {
		return "", Usagef("unknown format %q (want %s)", f.name, strings.Join(f.formats, ", "))
	}
	if f.asJSON {
		if f.name != "text" && f.name != "json" {
			return "", Usagef("--json is --format json, not --format %s", f.name)
		}
		return "json", nil
	}
	return f.name, nil
}

// InRange is a usage error "--name must be in lo..hi" when v is not.
func InRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Usagef("--%s must be in %d..%d", name, lo, hi)
	}
	return nil
}
