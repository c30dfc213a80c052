package ops

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Fact names one answer of a machine that results depend on: the largest
// shm segment its overcommit accepts, the version-dependent VMA rules its
// kernel follows. The kernel side reports its facts (Info.Facts); a pair
// hands each side the facts the other reports (Config.Facts), so that a
// model answers as that machine does instead of diverging. Every fact is
// declared once, in the table below: its wire name and what it means.
type Fact uint8

// The facts.
const (
	// FactShmMaxPages is the largest shm segment, in pages, that shmget
	// creates without ENOMEM here.
	FactShmMaxPages Fact = iota
	// FactVMAQuirks are the version-dependent VMA rules the kernel follows
	// (a VMAQuirks).
	FactVMAQuirks
	// FactHugePages is how many huge pages of the default size a
	// SHM_HUGETLB segment may reserve here (HugePages_Free less
	// HugePages_Rsvd), -1 where the kernel has no hugetlbfs.
	FactHugePages
	// FactHugePageKiB is the default huge page size, in KiB.
	FactHugePageKiB
	// FactKCOV is 1 where the kernel offers KCOV coverage
	// (/sys/kernel/debug/kcov: a kernel built with ci/kernel.sh --cover);
	// not reported where it does not. No model answers by it: it says
	// whether a run can ask that side for the kernel's coverage.
	FactKCOV
	numFacts
)

// factNames are the facts' names on the wire and in text, by Fact.
var factNames = [numFacts]string{
	FactShmMaxPages: "shm_max_pages",
	FactVMAQuirks:   "vma_quirks",
	FactHugePages:   "huge_pages",
	FactHugePageKiB: "huge_page_kib",
	FactKCOV:        "kcov",
}

func (f Fact) String() string {
	if f < numFacts {
		return factNames[f]
	}
	return fmt.Sprintf("fact%d", uint8(f))
}

// Facts are the facts one side reported; a fact not reported is unknown
// (and a model then keeps its own default). The zero value knows nothing.
// Facts compare with ==.
type Facts struct {
	known  uint32
	values [numFacts]int64
}

// Get returns a fact and whether it is known.
func (fs Facts) Get(f Fact) (int64, bool) {
	if f >= numFacts || fs.known&(1<<f) == 0 {
		return 0, false
	}
	return fs.values[f], true
}

// With returns fs with fact f set to v.
func (fs Facts) With(f Fact, v int64) Facts {
	if f < numFacts {
		fs.known |= 1 << f
		fs.values[f] = v
	}
	return fs
}

// ShmMaxPages is FactShmMaxPages.
func (fs Facts) ShmMaxPages() (int64, bool) { return fs.Get(FactShmMaxPages) }

// VMAQuirks is FactVMAQuirks.
func (fs Facts) VMAQuirks() (VMAQuirks, bool) {
	v, ok := fs.Get(FactVMAQuirks)
	return VMAQuirks(v), ok
}

// Empty reports whether no fact is known.
func (fs Facts) Empty() bool { return fs.known == 0 }

// Over returns fs with every fact of others it does not know itself taken
// from them, the first that knows a fact winning: what a side keeps of its
// own facts and what it takes from the others'.
func (fs Facts) Over(others ...Facts) Facts {
	for _, o := range others {
		for f := range numFacts {
			if _, mine := fs.Get(f); mine {
				continue
			}
			if v, ok := o.Get(f); ok {
				fs = fs.With(f, v)
			}
		}
	}
	return fs
}

// Map is the known facts by name: their form on the wire.
func (fs Facts) Map() map[string]int64 {
	if fs.Empty() {
		return nil
	}
	out := map[string]int64{}
	for f := range numFacts {
		if v, ok := fs.Get(f); ok {
			out[factNames[f]] = v
		}
	}
	return out
}

// FactsFromMap reads facts by name (Map's form). A name this build does
// not know is left out and returned in unknown: a newer side may know more
// facts than this one models.
func FactsFromMap(m map[string]int64) (fs Facts, unknown []string) {
	for name, v := range m {
		f, ok := factByName(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		fs = fs.With(f, v)
	}
	sort.Strings(unknown)
	return fs, unknown
}

func factByName(name string) (Fact, bool) {
	for f, n := range factNames {
		if n == name {
			return Fact(f), true
		}
	}
	return 0, false
}

// String writes the known facts, "name=value" joined by commas ("-" for
// none); the VMA quirks by name.
func (fs Facts) String() string {
	var parts []string
	for f := range numFacts {
		v, ok := fs.Get(f)
		if !ok {
			continue
		}
		text := fmt.Sprint(v)
		if f == FactVMAQuirks {
			text = VMAQuirks(v).String()
		}
		parts = append(parts, factNames[f]+"="+text)
	}
	return nameList(parts)
}

// ParseFacts reads text written by Facts.String (a finding's "# facts:"
// line). The VMA quirks' names are joined by commas too: a part with no
// '=' continues the value before it.
func ParseFacts(s string) (Facts, error) {
	var fs Facts
	if s == "-" || s == "" {
		return fs, nil
	}
	var names, values []string
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(part, "=")
		switch {
		case ok:
			names, values = append(names, name), append(values, value)
		case len(values) == 0:
			return fs, fmt.Errorf("facts %q: %q is no name=value", s, part)
		default:
			values[len(values)-1] += "," + part
		}
	}
	for i, name := range names {
		f, ok := factByName(name)
		if !ok {
			return fs, fmt.Errorf("facts %q: unknown fact %q", s, name)
		}
		var v int64
		var err error
		if f == FactVMAQuirks {
			var q VMAQuirks
			q, err = ParseVMAQuirks(values[i])
			v = int64(q)
		} else {
			v, err = strconv.ParseInt(values[i], 10, 64)
		}
		if err != nil {
			return fs, fmt.Errorf("facts %q: %s: %w", s, name, err)
		}
		fs = fs.With(f, v)
	}
	return fs, nil
}
