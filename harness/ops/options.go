package ops

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// OptionSpec declares one option an implementation's Reset takes
// ("alloc=cyclic|legacy"): parsing, validation, the OPTIONS column of
// ipcfuzz list and the refusal of an unknown option all come from it.
type OptionSpec struct {
	Name string
	// Values are the values it takes, its default first.
	Values []string
	// Doc says what it selects, in a few words.
	Doc string
	// Note qualifies the values for this implementation, shown after them
	// ("only what the process has"); "" for none.
	Note string
	// Free, when not "", says the option takes any non-empty value (a
	// path) besides Values, and names that value in list ("PATH").
	Free string
}

// Default is the option's default value.
func (o OptionSpec) Default() string { return o.Values[0] }

// String is the option as ipcfuzz list shows it: "name=v1|v2".
func (o OptionSpec) String() string {
	if o.Free != "" {
		return o.Name + "=" + o.Free
	}
	return o.Name + "=" + strings.Join(o.Values, "|")
}

// OptionSpecs are the options of one implementation.
type OptionSpecs []OptionSpec

// CapsOption is the option every implementation takes: the capabilities
// of a root caller beyond the ones every root has here. "none" (the
// default) is root without CAP_SYS_RESOURCE, as on the machine ipcfuzz was
// written on; "sys_resource" adds it (msgctl IPC_SET may then raise qbytes
// above msgmnb). The kernel accepts only what its process really has.
var CapsOption = OptionSpec{Name: OptionCaps, Values: []string{"none", CapSysResource}, Doc: "capabilities of a root caller beyond those every root has"}

// The caps option's name and its one capability.
const (
	OptionCaps     = "caps"
	CapSysResource = "sys_resource"
)

// String writes the options as ipcfuzz list shows them:
// "alloc=cyclic|legacy,caps=none|sys_resource (note)".
func (s OptionSpecs) String() string {
	parts := make([]string, len(s))
	for i, o := range s {
		parts[i] = o.String()
		if o.Note != "" {
			parts[i] += " (" + o.Note + ")"
		}
	}
	return strings.Join(parts, ",")
}

// Lookup returns the option called name.
func (s OptionSpecs) Lookup(name string) (OptionSpec, bool) {
	i := slices.IndexFunc(s, func(o OptionSpec) bool { return o.Name == name })
	if i < 0 {
		return OptionSpec{}, false
	}
	return s[i], true
}

// With returns s with the options of more that s does not name yet
// appended, in their order: the options of several parts, each once.
func (s OptionSpecs) With(more OptionSpecs) OptionSpecs {
	s = slices.Clip(s) // never write into the caller's spare capacity
	for _, o := range more {
		if _, dup := s.Lookup(o.Name); !dup {
			s = append(s, o)
		}
	}
	return s
}

// Parse validates options against the specs and returns every option's
// value, defaults filled in. An unknown option, or a value the option does
// not take, is refused in one line that lists what there is.
func (s OptionSpecs) Parse(options map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(s))
	for _, o := range s {
		out[o.Name] = o.Default()
	}
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := options[k]
		o, ok := s.Lookup(k)
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown option %s=%s (have %s)", k, v, s.names())
		case o.Free != "" && v != "":
		case !slices.Contains(o.Values, v):
			return nil, fmt.Errorf("option %s=%s: want %s", k, v, strings.Join(o.Values, " or "))
		}
		out[k] = v
	}
	return out, nil
}

func (s OptionSpecs) names() string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, o := range s {
		parts[i] = o.String()
	}
	return strings.Join(parts, ", ")
}

// Only returns the options of cfg that the specs declare.
func (s OptionSpecs) Only(options map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range options {
		if _, ok := s.Lookup(k); ok {
			out[k] = v
		}
	}
	return out
}
