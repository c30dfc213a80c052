package corpus

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// KnownExt is the extension of a known-differences file.
const KnownExt = ".known"

// KnownEntry is one declared difference.
type KnownEntry struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Pattern string `json:"pattern"`
	// Cause, when the entry has one (PATTERN@CAUSE), is a pattern of the
	// cause key (runner.CauseKey, without its "subsystem: ") of a shrunk
	// divergence: the entry explains only divergences the call it names
	// caused ("remap fixed"), wherever they show.
	Cause  string `json:"cause,omitempty"`
	Range  string `json:"releases"`
	Commit string `json:"commit"`
	Reason string `json:"reason"`
	rng    releaseRange
}

// Written is the entry's SIGNATURE field as the file writes it
// (PATTERN or PATTERN@CAUSE).
func (e *KnownEntry) Written() string {
	if e.Cause == "" {
		return e.Pattern
	}
	return e.Pattern + "@" + strings.ReplaceAll(e.Cause, " ", "+")
}

// Where is "file:line" of the entry.
func (e *KnownEntry) Where() string { return fmt.Sprintf("%s:%d", e.File, e.Line) }

// Matches reports whether sig matches the entry's pattern.
func (e *KnownEntry) Matches(sig string) bool {
	ok, _ := path.Match(e.Pattern, sig)
	return ok
}

// MatchesCause reports whether a cause key ("vma: remap fixed") matches
// the entry's cause pattern; false for an entry without one.
func (e *KnownEntry) MatchesCause(cause string) bool {
	if e.Cause == "" {
		return false
	}
	_, key, _ := strings.Cut(cause, ": ")
	ok, _ := path.Match(e.Cause, key)
	return ok
}

// InRange reports whether release (uname -r) is in the entry's range;
// false for "" (a side that is not a kernel).
func (e *KnownEntry) InRange(release string) bool {
	r, ok := parseRelease(release)
	return ok && e.rng.contains(r)
}

// Applies reports whether the entry speaks of a comparison of the
// kernels releaseA and releaseB (uname -r; "" for a side that is not a
// kernel): one runs a release in the range, the other a release out of
// it.
func (e *KnownEntry) Applies(releaseA, releaseB string) bool {
	a, okA := parseRelease(releaseA)
	b, okB := parseRelease(releaseB)
	if !okA || !okB {
		return false
	}
	return e.rng.contains(a) != e.rng.contains(b)
}

// Known is the known differences of a directory: what a kernel version
// explains, declared as data
// (corpus/known/*.known, one file per family of the kernel: vma.known,
// ipc.known), so that a comparison of two kernels reports them apart
// instead of as findings. A file is lines of four fields separated by
// blanks, the reason last (it may hold blanks); "#" starts a comment line:
//
//	# SIGNATURE        RELEASES  COMMIT        REASON
//	vma/seal/*ENOSYS*  <6.10     8be7258aad44  mseal absent before 6.10 (ENOSYS)
//
// SIGNATURE is a pattern of divergence signatures (path.Match: * does not
// cross a /), starting with its subsystem, and may end in @CAUSE: a
// pattern of the cause key of the shrunk divergence (runner.CauseKey
// without "subsystem: ", + for a blank: vma/*/*@remap+fixed), for a
// difference one call leaves in the state that later calls show under
// many signatures. RELEASES is the range of kernel
// releases that behave so: <V, <=V, >V, >=V, V (that series), A-B (both
// ends included), where a version is MAJOR.MINOR or MAJOR.MINOR.PATCH and
// is compared at the precision it is written in (6.12 covers 6.12.118).
// COMMIT is the upstream commit that changed the behaviour (7 to 40 hex
// digits), or - when it is not known yet. An entry applies to a
// comparison of two kernels one of which runs a release in its range and
// the other one not: a divergence there whose signature matches it is
// expected, not a finding. The pattern is written with the kernel out of
// the range as side A and the one in it as side B (mseal is ENOSYS on B:
// vma/seal/*-ENOSYS); a run with the sides the other way round is matched
// with its signature mirrored (runner.MirrorSignature). Parsing is strict: a bad line is an error
// naming the file and the line.
type Known struct {
	Dir     string
	Entries []*KnownEntry
}

// Match is the first entry without a cause that applies to the releases
// and whose pattern matches sig, or nil. A pattern is written for a kernel out of the range
// as side A and one in it as side B ("vma/seal/ok-ENOSYS": the older
// kernel, B, has no mseal); where A is the one in the range, it is
// matched against mirror(sig), the signature with the sides swapped.
func (k *Known) Match(sig, releaseA, releaseB string, mirror func(string) string) *KnownEntry {
	if k == nil {
		return nil
	}
	return k.first(sig, releaseA, releaseB, mirror, func(e *KnownEntry) bool { return e.Cause == "" })
}

// MatchCause is the first entry with a cause that applies to the
// releases, whose pattern matches sig (mirrored as Match does) and whose
// cause matches cause (the shrunk divergence's runner.CauseKey), or nil.
func (k *Known) MatchCause(sig, cause, releaseA, releaseB string, mirror func(string) string) *KnownEntry {
	if k == nil {
		return nil
	}
	return k.first(sig, releaseA, releaseB, mirror, func(e *KnownEntry) bool { return e.Cause != "" && e.MatchesCause(cause) })
}

// first is the first entry that keep takes, that applies to the releases
// and whose pattern matches sig (mirrored where A is the release in the
// entry's range), or nil.
func (k *Known) first(sig, releaseA, releaseB string, mirror func(string) string, keep func(*KnownEntry) bool) *KnownEntry {
	for _, e := range k.Entries {
		if !keep(e) || !e.Applies(releaseA, releaseB) {
			continue
		}
		s := sig
		if e.InRange(releaseA) {
			s = mirror(sig)
		}
		if e.Matches(s) {
			return e
		}
	}
	return nil
}

// HasCauses reports whether an entry has a cause: the divergences of a
// run are then shrunk before they are judged expected or not.
func (k *Known) HasCauses() bool {
	if k == nil {
		return false
	}
	for _, e := range k.Entries {
		if e.Cause != "" {
			return true
		}
	}
	return false
}

// ReadKnown reads every *.known file of dir, in name order.
func ReadKnown(dir string) (*Known, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*"+KnownExt))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("known differences: %w", err)
	}
	sort.Strings(names)
	k := &Known{Dir: dir}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		es, err := ParseKnown(n, string(b))
		if err != nil {
			return nil, err
		}
		k.Entries = append(k.Entries, es...)
	}
	return k, nil
}

var (
	commitRE  = regexp.MustCompile(`^([0-9a-f]{7,40}|-)$`)
	patternRE = regexp.MustCompile(`^[a-z]+/[A-Za-z0-9_+,.*?\[\]/-]+$`)
	causeRE   = regexp.MustCompile(`^[a-z0-9_+=<>*?.-]+$`)
)

// ParseKnown reads the entries of one known-differences file; name is
// its path, for the entries and the errors ("name:line: ...").
func ParseKnown(name, text string) ([]*KnownEntry, error) {
	var out []*KnownEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseKnownLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		e.File, e.Line = name, n
		out = append(out, e)
	}
	return out, sc.Err()
}

// parseKnownLine reads "PATTERN RELEASES COMMIT REASON...".
func parseKnownLine(line string) (*KnownEntry, error) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return nil, errors.New("want SIGNATURE RELEASES COMMIT REASON")
	}
	e := &KnownEntry{Pattern: f[0], Range: f[1], Commit: f[2]}
	if pat, cause, ok := strings.Cut(e.Pattern, "@"); ok {
		if cause == "" || !causeRE.MatchString(cause) {
			return nil, fmt.Errorf("cause %q: want the call's name and its choosing words, joined by + (remap+fixed)", cause)
		}
		if _, err := path.Match(cause, ""); err != nil {
			return nil, fmt.Errorf("cause %q: %w", cause, err)
		}
		e.Pattern, e.Cause = pat, strings.ReplaceAll(cause, "+", " ")
	}
	// The reason is the rest of the line as written.
	rest := line
	for _, w := range f[:3] {
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), w))
	}
	e.Reason = rest
	if !patternRE.MatchString(e.Pattern) {
		return nil, fmt.Errorf("signature pattern %q: want SUBSYSTEM/... (letters, digits, -+,._/ and the wildcards * ? [])", e.Pattern)
	}
	if sub, _, _ := strings.Cut(e.Pattern, "/"); !isSubsystem(sub) {
		return nil, fmt.Errorf("signature pattern %q: %q is not a subsystem (want one of %s)", e.Pattern, sub, strings.Join(ops.Subsystems(), ", "))
	}
	if _, err := path.Match(e.Pattern, ""); err != nil {
		return nil, fmt.Errorf("signature pattern %q: %w", e.Pattern, err)
	}
	r, err := parseReleaseRange(e.Range)
	if err != nil {
		return nil, err
	}
	e.rng = r
	if !commitRE.MatchString(e.Commit) {
		return nil, fmt.Errorf("commit %q: want 7 to 40 hex digits, or - when it is not known", e.Commit)
	}
	return e, nil
}

// release is a kernel version: major, minor, patch.
type release [3]int

// parseRelease reads the version at the start of a release ("6.1.0-57-amd64",
// "6.12.118+deb12-amd64", "6.18.44-fc"); false for "" or anything else.
func parseRelease(s string) (release, bool) {
	v, n, ok := parseVersion(s)
	if !ok || n < 2 {
		return release{}, false
	}
	return v, true
}

// parseVersion reads MAJOR.MINOR[.PATCH] at the start of s: the version
// and how many of its parts were written.
func parseVersion(s string) (release, int, bool) {
	var v release
	n := 0
	for n < 3 {
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		x, err := strconv.Atoi(s[:end])
		if err != nil {
			return v, n, false
		}
		v[n] = x
		n++
		s = s[end:]
		if n < 3 && strings.HasPrefix(s, ".") && len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
			s = s[1:]
			continue
		}
		break
	}
	return v, n, n > 0
}

// bound is a version written with prec parts (2 or 3).
type bound struct {
	v    release
	prec int
}

// cmp compares r with the bound at the bound's precision: -1, 0, 1.
func (b bound) cmp(r release) int {
	for i := range b.prec {
		switch {
		case r[i] < b.v[i]:
			return -1
		case r[i] > b.v[i]:
			return 1
		}
	}
	return 0
}

// releaseRange is a set of releases: from lo (if any) to hi (if any).
type releaseRange struct {
	lo, hi         *bound
	loOpen, hiOpen bool // the bound itself is left out
}

func (r releaseRange) contains(v release) bool {
	if r.lo != nil {
		if c := r.lo.cmp(v); c < 0 || c == 0 && r.loOpen {
			return false
		}
	}
	if r.hi != nil {
		if c := r.hi.cmp(v); c > 0 || c == 0 && r.hiOpen {
			return false
		}
	}
	return true
}

// parseReleaseRange reads <V, <=V, >V, >=V, V or A-B.
func parseReleaseRange(s string) (releaseRange, error) {
	bad := func(why string) error {
		return fmt.Errorf("releases %q: %s (want <V, <=V, >V, >=V, V or A-B, V = MAJOR.MINOR[.PATCH])", s, why)
	}
	readBound := func(t string) (*bound, error) {
		v, n, ok := parseVersion(t)
		if !ok || n < 2 || len(t) != len(formatVersion(v, n)) {
			return nil, bad(fmt.Sprintf("%q is not a version", t))
		}
		return &bound{v, n}, nil
	}
	var r releaseRange
	var err error
	switch {
	case strings.HasPrefix(s, "<="):
		r.hi, err = readBound(s[2:])
	case strings.HasPrefix(s, "<"):
		r.hi, err = readBound(s[1:])
		r.hiOpen = true
	case strings.HasPrefix(s, ">="):
		r.lo, err = readBound(s[2:])
	case strings.HasPrefix(s, ">"):
		r.lo, err = readBound(s[1:])
		r.loOpen = true
	case strings.Contains(s, "-"):
		a, b, _ := strings.Cut(s, "-")
		if r.lo, err = readBound(a); err == nil {
			r.hi, err = readBound(b)
		}
		if err == nil && r.lo.cmp(r.hi.v) < 0 {
			err = bad("the range is empty")
		}
	default:
		r.lo, err = readBound(s)
		r.hi = r.lo
	}
	return r, err
}

// formatVersion writes the first n parts of v.
func formatVersion(v release, n int) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = strconv.Itoa(v[i])
	}
	return strings.Join(parts, ".")
}

// isSubsystem reports whether name is a subsystem of the vocabulary.
func isSubsystem(name string) bool {
	_, ok := ops.Subsystem(name)
	return ok
}

// DefaultKnown is where compare reads the known differences of kernel
// versions when it is not told: relative to the working directory, and
// only if it is there.
const DefaultKnown = "corpus/known"

// LoadKnown reads the known differences a --known value names: none for
// "none", DefaultKnown when it is there and nothing is said ("").
func LoadKnown(dir string) (*Known, error) {
	switch dir {
	case "none":
		return nil, nil
	case "":
		if _, err := os.Stat(DefaultKnown); err != nil {
			return nil, nil
		}
		dir = DefaultKnown
	}
	return ReadKnown(dir)
}
