package corpus

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// FormatVersion is the version of the finding file format Render writes
// (the "# format:" line). Files without that line are of format 1: a kind,
// a "found by" command, notes and the side-by-side table, and a script
// without results; ParseFinding reads them too.
const FormatVersion = 2

// Finding is everything a finding file records: its header (how, where
// and when it was found), the script, and what each side answered.
//
// A finding file is a script in canonical text form (ops.Format) preceded
// by '#' comment lines, so that any script reader takes it as it is. Its
// body states, after "->", the results of the side the header names as
// stated (B, the reference side, for a divergence), so that replay checks
// the behaviour the file records. The comment lines are, in this order:
//
//	# ipcfuzz KIND                        divergence or plugin failure
//	# format: 2
//	# version: V                          ipcfuzz's module version ("(devel)" in a checkout)
//	# revision: R                         its VCS revision ("(modified)" after it: the tree had changes)
//	# date: 2026-12-02T14:05:11Z          when it was found (UTC)
//	# command: ipcfuzz compare A B ...    the command that found it, with its seed
//	# seed: N                             the run's seed
//	# script: I (script seed S)           the index of the script in the run, and its own seed
//	# engine: rapid                       the generator
//	# relation: exact                     the equivalence it was compared under
//	# side A: SPEC (INFO)                 each side as given (options included), and what it said of itself
//	# side B: SPEC (INFO)
//	# kernel: RELEASE                     uname -r of the kernel side(s) ("" when none)
//	# facts: NAME=V,...                   the machine facts handed to the sides (ops.Facts)
//	# signature: SIG                      the runner's signature
//	# hits: N                             how often the run hit the signature
//	# stated: B                           whose results the body states (A, B, or none)
//	# stderr: FILE                        the failing plugin's whole stderr, beside this file
//	# flaky: yes                          it did not show again when run again
//	# note: TEXT                          one line each: where it diverged, the shrink, ...
//	# A step N -> RESULT                  the other side's result, where it differs from the stated one
//	# A step N: no result                 (and where it has none from step N on)
//	# final GROUP of A:                   a group of the final states that differs,
//	#   TEXT                              its lines indented
//	#
//	# step  A: ...  B: ...                the side-by-side table, for people
//
// Every line but the first is optional; a reader ignores keys it does not
// know (they are kept as notes).
type Finding struct {
	Header
	// Script holds the operations, each step stating the result of the
	// side Header.Stated names (ParseFinding), or whatever it states
	// (Render takes the results from the sides when Stated is set).
	Script *ops.Script
	// A and B are the two sides and their results, step by step; Results
	// is shorter than the script (nil for a plugin failure) where a side
	// gave no result.
	A, B Side
	// Notes are the free lines of the header, one each.
	Notes []string
	// Final lists the groups of the final states that differ.
	Final []FinalGroup
	// Path is the file it was read from ("" when not read from a file).
	Path string
}

// Side is one implementation of a finding: its name as given, what it
// said of itself, and, when it got that far, its results.
type Side struct {
	Name    string       // as the user wrote it, options included: "naive:alloc=legacy"
	Info    string       // its own name and version: "kernel Linux 6.18.0"
	Results []ops.Result // one per step, as far as it answered
}

// FinalGroup is a group of the final states (ops.SnapshotGroups) in which
// the two sides differ: each side's text.
type FinalGroup struct {
	Name string
	A, B string
}

// Header is what a finding file's comment header records: how it was
// found, on which pair, under which signature, where and when. A seed (a
// file with no header) has an empty Kind.
type Header struct {
	Kind     string // "divergence", "plugin failure", or "" for a seed
	Format   int    // FormatVersion for files Render wrote, 1 for older findings, 0 for a seed
	Version  string // ipcfuzz's version
	Revision string // ipcfuzz's VCS revision ("unknown" when not stamped)
	Date     string // when it was found, RFC 3339 in UTC
	Command  string // the command that found it
	// Seed is the run's seed and Index the script's number in the run
	// (ScriptSeed its own seed); HasSeed says whether the file states
	// them.
	Seed       uint64
	Index      int
	ScriptSeed uint64
	HasSeed    bool
	Engine     string
	Relation   string // the equivalence it was compared under ("exact" if not said)
	A, B       string // the recorded pair of implementations, as given
	AInfo      string // what A said of itself (name and version)
	BInfo      string
	Kernel     string // the kernel release (uname -r) of the kernel side(s), "" when none
	Facts      string // the machine facts handed to the sides (ops.Facts.String)
	Signature  string // the runner's signature, when the file names one
	Hits       int    // how often the run that found it hit its signature (0: not said)
	Stated     string // "A" or "B": whose results the body states ("" none)
	Stderr     string // the file beside it that holds the plugin's whole stderr
	Flaky      bool   // marked flaky by the runner or by a merge
}

// IsFinding reports whether the header belongs to a finding (not a seed).
func (h Header) IsFinding() bool { return h.Kind != "" }

// side returns a side by its letter ("A" or "B"), or nil.
func (f *Finding) side(letter string) *Side {
	switch letter {
	case "A":
		return &f.A
	case "B":
		return &f.B
	}
	return nil
}

// Expected returns the results the finding holds as right on side
// letter's word ("A" or "B"): what a reproducer checks the kernel against.
func (f *Finding) Expected(letter string) ([]ops.Result, error) {
	s := f.side(letter)
	if s == nil {
		return nil, fmt.Errorf("%s: no side %q (want A or B)", f.name(), letter)
	}
	if len(s.Results) == 0 {
		return nil, fmt.Errorf("%s: side %s (%s) recorded no results", f.name(), letter, s.Name)
	}
	return s.Results, nil
}

func (f *Finding) name() string {
	if f.Path != "" {
		return f.Path
	}
	return "finding"
}

// ReadFinding reads a finding file: its header, its script and both
// sides' results. A seed (a script with no header) reads as a Finding with
// an empty Kind, its stated results as side A's.
func ReadFinding(path string) (*Finding, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseFinding(path, string(data))
	if err != nil {
		return nil, err
	}
	f.Path = path
	return f, nil
}

// ParseFinding parses the text of a finding file; name is used in errors.
// The script is parsed as strictly as any script; a header line that does
// not parse is an error naming its line.
func ParseFinding(name, text string) (*Finding, error) {
	sc, err := ops.Parse(name, strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	f := &Finding{Script: sc}
	var p headerParser
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			break
		}
		if err := p.take(f, line); err != nil {
			return nil, &ops.ParseError{File: name, Line: i + 1, Err: err}
		}
	}
	f.finish(&p)
	return f, nil
}

// ParseHeader reads the comment lines at the top of a finding file (its
// script need not parse).
func ParseHeader(text string) Header {
	f := &Finding{}
	var p headerParser
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		_ = p.take(f, line) // a line that does not parse is left out
	}
	f.finishHeader()
	return f.Header
}

// headerParser holds where the header reader is: in a final group, in the
// table, and the other side's results read so far.
type headerParser struct {
	final   *FinalGroup
	finalOf string // "A" or "B"
	inTable bool
	other   map[int]*ops.Result // step (1-based) -> result; nil value: no result from there
	otherOf string
}

// take reads one header line.
func (p *headerParser) take(f *Finding, line string) error {
	body := strings.TrimPrefix(line, "#")
	if p.final != nil && strings.HasPrefix(body, "   ") {
		text := strings.TrimPrefix(body, "   ")
		if p.finalOf == "A" {
			p.final.A += text + "\n"
		} else {
			p.final.B += text + "\n"
		}
		return nil
	}
	p.final = nil
	body = strings.TrimSpace(body)
	if m := tableLine.FindStringSubmatch(line); m != nil {
		p.inTable = true
		if f.Header.A == "" {
			f.Header.A, f.Header.B = m[1], m[2]
		}
		return nil
	}
	if p.inTable || body == "" {
		return nil
	}
	if strings.HasPrefix(body, "ipcfuzz ") && f.Kind == "" {
		f.Kind = strings.TrimPrefix(body, "ipcfuzz ")
		return nil
	}
	if strings.HasPrefix(line, FlakyMark) {
		f.Flaky = true
		f.Notes = append(f.Notes, body)
		return nil
	}
	if f.Format >= 2 {
		if handled, err := p.stepLine(f, body); handled {
			return err
		}
		if p.finalLine(f, body) {
			return nil
		}
	}
	key, value, ok := strings.Cut(body, ": ")
	if !ok {
		key, value, ok = strings.Cut(body, ":")
	}
	if ok && (f.Format >= 2 || key == "format") { // format 1 has free lines only
		if handled, err := f.Header.field(key, strings.TrimSpace(value)); handled {
			return err
		}
	}
	// Format 1 lines, and free notes.
	switch {
	case strings.HasPrefix(body, "found by: "):
		f.Command = strings.TrimPrefix(body, "found by: ")
		f.fromCommand()
	case strings.HasPrefix(body, "signature ") && f.Signature == "":
		f.Signature = strings.TrimSpace(strings.TrimPrefix(body, "signature "))
	default:
		if strings.Contains(body, ": FLAKY,") {
			f.Flaky = true
		}
		f.Notes = append(f.Notes, strings.TrimPrefix(body, "note: "))
	}
	return nil
}

// textFields gives, by key, the header's fields whose value is their
// line's text. The command is kept for people: what it says is read from
// the other fields.
func (h *Header) textFields() map[string]*string {
	return map[string]*string{
		"version": &h.Version, "revision": &h.Revision, "date": &h.Date, "command": &h.Command,
		"engine": &h.Engine, "relation": &h.Relation, "kernel": &h.Kernel, "facts": &h.Facts,
		"signature": &h.Signature, "stderr": &h.Stderr,
	}
}

// field reads one "key: value" line of the header; handled is false for a
// key it does not know.
func (h *Header) field(key, value string) (handled bool, err error) {
	if text, ok := h.textFields()[key]; ok {
		*text = value
		return true, nil
	}
	handled = true
	switch key {
	case "format":
		h.Format, err = strconv.Atoi(value)
	case "seed":
		h.Seed, err = strconv.ParseUint(value, 10, 64)
		h.HasSeed = err == nil
	case "script":
		_, err = fmt.Sscanf(value, "%d (script seed %d)", &h.Index, &h.ScriptSeed)
	case "side A":
		h.A, h.AInfo = splitSide(value)
	case "side B":
		h.B, h.BInfo = splitSide(value)
	case "hits":
		h.Hits, err = strconv.Atoi(value)
	case "stated":
		h.Stated = value
		if value != "A" && value != "B" && value != "none" {
			err = fmt.Errorf("stated: %q is not A, B or none", value)
		}
	case "flaky":
		h.Flaky = true
	default:
		handled = false
	}
	if err != nil {
		err = fmt.Errorf("header %q: %w", key, err)
	}
	return handled, err
}

// splitSide splits "SPEC (INFO)" into its parts.
func splitSide(v string) (spec, info string) {
	if i := strings.LastIndex(v, " ("); i > 0 && strings.HasSuffix(v, ")") {
		return v[:i], v[i+2 : len(v)-1]
	}
	return v, ""
}

// stepLine reads "A step N -> RESULT" or "A step N: no result".
func (p *headerParser) stepLine(f *Finding, body string) (bool, error) {
	letter, rest, ok := strings.Cut(body, " step ")
	if !ok || (letter != "A" && letter != "B") {
		return false, nil
	}
	num, text, hasResult := strings.Cut(rest, " -> ")
	noResult := false
	if !hasResult {
		num, noResult = strings.CutSuffix(rest, ": no result")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return false, nil
	}
	if p.other == nil {
		p.other = map[int]*ops.Result{}
	}
	p.otherOf = letter
	switch {
	case noResult:
		p.other[n] = nil
		return true, nil
	case !hasResult:
		return true, fmt.Errorf("%s step %d: want '-> RESULT' or ': no result'", letter, n)
	}
	if f.Script == nil {
		return true, nil // ParseHeader: no script to read it against
	}
	if n > len(f.Script.Steps) {
		return true, fmt.Errorf("%s step %d: the script has %d steps", letter, n, len(f.Script.Steps))
	}
	r, err := ops.ParseResult(f.Script.Steps[n-1].Op, text)
	if err != nil {
		return true, fmt.Errorf("%s step %d: %w", letter, n, err)
	}
	p.other[n] = &r
	return true, nil
}

// finalLine reads "final GROUP of A:", which starts a group's lines.
func (p *headerParser) finalLine(f *Finding, body string) bool {
	rest, ok := strings.CutPrefix(body, "final ")
	if !ok || !strings.HasSuffix(rest, ":") {
		return false
	}
	group, letter, ok := strings.Cut(strings.TrimSuffix(rest, ":"), " of ")
	if !ok || (letter != "A" && letter != "B") {
		return false
	}
	for i := range f.Final {
		if f.Final[i].Name == group {
			p.final = &f.Final[i]
		}
	}
	if p.final == nil {
		f.Final = append(f.Final, FinalGroup{Name: group})
		p.final = &f.Final[len(f.Final)-1]
	}
	p.finalOf = letter
	return true
}

// fromCommand takes the pair, the relation, the seed and the engine from a
// format 1 file's "found by: ipcfuzz compare A B ... --equiv R ..." line,
// the only place such a file states them. A format 2 header states each
// as a field of its own, and its command is for people only.
func (h *Header) fromCommand() {
	f := strings.Fields(h.Command)
	if len(f) >= 4 && strings.HasSuffix(f[0], "ipcfuzz") && f[1] == "compare" && h.A == "" {
		h.A, h.B = f[2], f[3]
	}
	for i := 0; i+1 < len(f); i++ {
		switch f[i] {
		case "--equiv":
			if h.Relation == "" {
				h.Relation = f[i+1]
			}
		case "--engine":
			if h.Engine == "" {
				h.Engine = f[i+1]
			}
		case "--seed":
			if s, err := strconv.ParseUint(f[i+1], 10, 64); err == nil && !h.HasSeed {
				h.Seed, h.HasSeed = s, true
			}
		}
	}
}

// finishHeader fills what a header leaves unsaid.
func (f *Finding) finishHeader() {
	if f.Relation == "" {
		f.Relation = "exact"
	}
	if f.Format == 0 && f.Kind != "" {
		f.Format = 1
	}
	if f.Stated == "none" {
		f.Stated = ""
	}
}

// finish fills the sides from the script's stated results and the other
// side's lines.
func (f *Finding) finish(p *headerParser) {
	f.finishHeader()
	f.A.Name, f.B.Name = f.Header.A, f.Header.B
	f.A.Info, f.B.Info = f.AInfo, f.BInfo
	stated := f.Stated
	if stated == "" && !f.IsFinding() {
		stated = "A" // a seed: its results are what every side must give
	}
	var results []ops.Result
	for _, st := range f.Script.Steps {
		if st.Want == nil {
			break
		}
		results = append(results, *st.Want)
	}
	s := f.side(stated)
	if s == nil {
		return
	}
	s.Results = results
	otherOf := map[string]string{"A": "B", "B": "A"}[stated]
	if p.other != nil && p.otherOf != otherOf {
		return // lines of the stated side itself: nothing to say of the other
	}
	out := append([]ops.Result(nil), results...)
	for n := 1; n <= len(f.Script.Steps); n++ {
		r, said := p.other[n]
		if !said {
			continue
		}
		if r == nil {
			out = out[:min(n-1, len(out))]
			break
		}
		switch {
		case n-1 < len(out):
			out[n-1] = *r
		case n-1 == len(out):
			out = append(out, *r)
		}
	}
	f.side(otherOf).Results = out
}
