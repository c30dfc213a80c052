package corpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Sighting is one report of a script: by one run, on one day, on one
// kernel, with the number of times that run hit its signature.
type Sighting struct {
	Hits   int
	Date   string // YYYY-MM-DD
	Kernel string // uname -r of the machine that ran it ("" unknown)
}

// Candidate is one script file read from a merge's inputs.
type Candidate struct {
	Path      string
	Text      string // the file as read (header and script)
	Script    *ops.Script
	Header    Header
	Hash      string
	Sightings []Sighting // this file's, and those of inputs holding the same script
	Signature string     // the replay's signature, or the recorded one
}

// Verdict is what replaying a candidate on its recorded pair showed.
type Verdict struct {
	Tries      int
	Reproduced int    // tries on which it showed again
	Signature  string // as the replay computed it ("" keeps the recorded one)
}

// Checker is what a merge needs from outside the corpus: whether a script
// still fits this build (its subsystem, its pair, its relation), and
// replays of it on its recorded pair.
type Checker interface {
	// Stale returns why a parsed script no longer fits, or "".
	Stale(c *Candidate) string
	// Reproduce replays c on its recorded pair tries times.
	Reproduce(ctx context.Context, c *Candidate, tries int) (Verdict, error)
}

// MergeOptions configure a merge.
type MergeOptions struct {
	Into    string   // the corpus merged into: nothing in it is ever removed
	Inputs  []string // directories of findings (shard outputs, other corpora)
	Tries   int      // replays of each new script (default 3)
	Date    string   // today, for inputs that do not say when they ran
	Checker Checker
}

// Dropped is an input file a merge did not keep, and why.
type Dropped struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Seen is a signature as a merge left it, with what tonight's inputs
// added and, for a new one, the text of its script.
type Seen struct {
	Record
	Tonight int    `json:"tonight"` // hits reported by tonight's inputs
	Text    string `json:"text,omitempty"`
}

// MergeReport accounts for every input file of a merge.
type MergeReport struct {
	Files         int       `json:"files"`          // script files read from the inputs
	Unparsable    int       `json:"unparsable"`     // not a strict script: dropped
	Stale         int       `json:"stale"`          // parses but no longer fits: dropped
	Duplicates    int       `json:"duplicates"`     // the same script as an earlier input file
	Known         int       `json:"known"`          // a script the corpus holds already
	NotReproduced int       `json:"not_reproduced"` // no replay showed it again: dropped
	Flaky         int       `json:"flaky"`          // some replays showed it: kept, marked
	Larger        int       `json:"larger"`         // a smaller script of its signature is kept
	Added         []string  `json:"added"`          // files written into the corpus
	New           []Seen    `json:"new"`            // signatures never seen before
	Again         []Seen    `json:"again"`          // known signatures seen again
	Dropped       []Dropped `json:"dropped"`
	Shards        []Shard   `json:"shards"` // the inputs' summaries, where they have one
}

// merger holds one merge's state.
type merger struct {
	o        MergeOptions
	m        *Manifest
	present  map[string]string     // hash -> signature ("" unknown) of the corpus's scripts
	cands    map[string]*Candidate // by hash, new scripts only
	order    []string              // hashes in the order first read
	tonight  map[string]int        // signature -> hits from tonight's inputs
	fresh    map[string]bool       // signatures this merge added to the manifest
	rep      *MergeReport
	metaDirs map[string]shardMeta
}

// Merge merges the inputs' findings into o.Into: a union by content hash
// in which unparsable and stale files are dropped and counted, a new
// script is kept only if it reproduces on its recorded pair (flaky ones
// are kept and marked), and of each signature only the smallest script is
// added. The manifest records every signature's history. Files already in
// o.Into are never removed or rewritten. An input that is not a directory
// is refused before anything is read.
func Merge(ctx context.Context, o MergeOptions) (*MergeReport, error) {
	for _, d := range o.Inputs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("corpus merge: %s is not a directory", d)
		}
	}
	if o.Tries <= 0 {
		o.Tries = 3
	}
	g := &merger{o: o, present: map[string]string{}, cands: map[string]*Candidate{}, tonight: map[string]int{}, fresh: map[string]bool{},
		rep: &MergeReport{Added: []string{}, New: []Seen{}, Again: []Seen{}, Dropped: []Dropped{}, Shards: []Shard{}}, metaDirs: map[string]shardMeta{}}
	var err error
	if g.m, err = ReadManifest(o.Into); err != nil {
		return nil, err
	}
	if err := g.loadCorpus(); err != nil {
		return nil, err
	}
	for _, in := range o.Inputs {
		if err := g.readInput(in); err != nil {
			return nil, err
		}
	}
	kept, err := g.reproduce(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.keepSmallest(kept); err != nil {
		return nil, err
	}
	g.report()
	return g.rep, g.m.Write(o.Into)
}

// loadCorpus indexes the scripts o.Into holds, and gives a manifest
// record to each finding whose signature the manifest lacks.
func (g *merger) loadCorpus() error {
	if err := os.MkdirAll(g.o.Into, 0o755); err != nil {
		return fmt.Errorf("corpus merge: %w", err)
	}
	files, err := Files(g.o.Into)
	if err != nil {
		return fmt.Errorf("corpus merge: reading %s: %w", g.o.Into, err)
	}
	for _, f := range files {
		c, err := readCandidate(f)
		if err != nil {
			continue // a committed file that does not parse is left alone
		}
		g.present[c.Hash] = c.Header.Signature
		if c.Header.Signature != "" && g.m.Find(c.Header.Signature) == nil {
			// A manifest that lost it: the file's own header says how
			// often, when and on which kernel it was found.
			r := g.record(c, f)
			date := ""
			if len(c.Header.Date) >= 10 {
				date = c.Header.Date[:10]
			}
			r.Seen(c.Header.Hits, date, c.Header.Kernel)
			g.m.Signatures = append(g.m.Signatures, r)
		}
	}
	return nil
}

// record makes the manifest record of a script stored at path.
func (g *merger) record(c *Candidate, path string) Record {
	rel, err := filepath.Rel(g.o.Into, path)
	if err != nil {
		rel = path
	}
	sig := c.Signature
	if sig == "" {
		sig = c.Header.Signature
	}
	return Record{Signature: sig, Kind: c.Header.Kind, Subsystem: c.Script.Subsystem, Pair: c.Header.A + "," + c.Header.B,
		Script: filepath.ToSlash(rel), Ops: len(c.Script.Steps), Kernels: []string{}, Flaky: c.Header.Flaky}
}

// readCandidate reads and parses one script file.
func readCandidate(path string) (*Candidate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("corpus merge: %w", err)
	}
	sc, err := ops.ParseString(string(data))
	if err != nil {
		return nil, err
	}
	h := ParseHeader(string(data))
	return &Candidate{Path: path, Text: string(data), Script: sc, Header: h, Hash: Hash(sc), Signature: h.Signature}, nil
}

// readInput takes every script file under one input directory.
func (g *merger) readInput(dir string) error {
	files, err := Files(dir)
	if err != nil {
		return fmt.Errorf("corpus merge: reading %s: %w", dir, err)
	}
	top, err := g.meta(dir, filepath.Join(dir, SummaryName))
	if err != nil {
		return err
	}
	if top.found {
		g.rep.Shards = append(g.rep.Shards, top.Shard)
	}
	for _, f := range files {
		g.rep.Files++
		c, err := readCandidate(f)
		if err != nil {
			g.drop(&g.rep.Unparsable, f, "unparsable: "+firstLine(err.Error()))
			continue
		}
		meta, err := g.meta(dir, f)
		if err != nil {
			return err
		}
		c.Sightings = []Sighting{meta.sighting(f, c.Header, g.o.Date)}
		g.take(c)
	}
	return nil
}

// take sorts one parsed input file: known, duplicate, stale or new.
func (g *merger) take(c *Candidate) {
	if sig, ok := g.present[c.Hash]; ok {
		g.rep.Known++
		if sig == "" {
			sig = c.Header.Signature
		}
		g.credit(sig, c.Sightings)
		return
	}
	if first, ok := g.cands[c.Hash]; ok {
		g.rep.Duplicates++
		first.Sightings = append(first.Sightings, c.Sightings...)
		return
	}
	if why := g.o.Checker.Stale(c); why != "" {
		g.drop(&g.rep.Stale, c.Path, "stale: "+why)
		return
	}
	g.cands[c.Hash] = c
	g.order = append(g.order, c.Hash)
}

// credit adds sightings to a known signature's record.
func (g *merger) credit(sig string, ss []Sighting) {
	r := g.m.Find(sig)
	if r == nil {
		return
	}
	for _, s := range ss {
		r.Seen(s.Hits, s.Date, s.Kernel)
		g.tonight[sig] += s.Hits
	}
}

func (g *merger) drop(counter *int, path, why string) {
	*counter++
	g.rep.Dropped = append(g.rep.Dropped, Dropped{Path: path, Why: why})
}

// reproduce replays every new script on its recorded pair and returns
// those that showed again, flaky ones marked.
func (g *merger) reproduce(ctx context.Context) ([]*Candidate, error) {
	var kept []*Candidate
	for _, h := range g.order {
		c := g.cands[h]
		v, err := g.o.Checker.Reproduce(ctx, c, g.o.Tries)
		if err != nil {
			return nil, fmt.Errorf("corpus merge: replaying %s: %w", c.Path, err)
		}
		if v.Reproduced == 0 {
			g.drop(&g.rep.NotReproduced, c.Path, fmt.Sprintf("did not reproduce in %d tries on %s,%s", v.Tries, c.Header.A, c.Header.B))
			continue
		}
		if v.Signature != "" {
			c.Signature = v.Signature
		}
		if v.Reproduced < v.Tries {
			g.rep.Flaky++
			c.Header.Flaky = true
			c.Text = MarkFlaky(c.Text, fmt.Sprintf("reproduced %d of %d tries on %s,%s when merged on %s", v.Reproduced, v.Tries, c.Header.A, c.Header.B, g.o.Date))
		}
		kept = append(kept, c)
	}
	return kept, nil
}

// keepSmallest adds, for each signature, its smallest new script, if it is
// smaller than the one the corpus holds.
func (g *merger) keepSmallest(kept []*Candidate) error {
	groups := map[string][]*Candidate{}
	var sigs []string
	for _, c := range kept {
		if groups[c.Signature] == nil {
			sigs = append(sigs, c.Signature)
		}
		groups[c.Signature] = append(groups[c.Signature], c)
	}
	for _, sig := range sigs {
		if err := g.keepGroup(sig, groups[sig]); err != nil {
			return err
		}
	}
	return nil
}

// keepGroup adds the smallest of one signature's scripts.
func (g *merger) keepGroup(sig string, group []*Candidate) error {
	sort.SliceStable(group, func(i, j int) bool { return smaller(group[i], group[j]) })
	best := group[0]
	g.rep.Larger += len(group) - 1
	var all []Sighting
	for _, c := range group {
		all = append(all, c.Sightings...)
	}
	r := g.m.Find(sig)
	switch {
	case r == nil:
		path, err := g.write(best)
		if err != nil {
			return err
		}
		g.m.Signatures = append(g.m.Signatures, g.record(best, path))
		g.fresh[sig] = true
	case len(best.Script.Steps) < r.Ops:
		path, err := g.write(best)
		if err != nil {
			return err
		}
		rel := g.record(best, path)
		r.Script, r.Ops = rel.Script, rel.Ops
		r.Flaky = r.Flaky || best.Header.Flaky
	default:
		g.rep.Larger++
	}
	g.credit(sig, all)
	return nil
}

// smaller orders scripts by length, then text size, then hash.
func smaller(a, b *Candidate) bool {
	if la, lb := len(a.Script.Steps), len(b.Script.Steps); la != lb {
		return la < lb
	}
	if la, lb := len(ops.Format(a.Script)), len(ops.Format(b.Script)); la != lb {
		return la < lb
	}
	return a.Hash < b.Hash
}

// write stores a new script under o.Into, never over an existing file.
func (g *merger) write(c *Candidate) (string, error) {
	path := g.pathOf(c)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("corpus merge: %w", err)
	}
	if _, err := createAtomic(path, []byte(c.Text), 0o644); err != nil {
		return "", fmt.Errorf("corpus merge: %w", err)
	}
	g.present[c.Hash] = c.Signature
	g.rep.Added = append(g.rep.Added, path)
	return path, nil
}

// pathOf is where a new script goes in the corpus: a finding under the
// name that says what makes it distinct (BaseName), anything else under
// its content hash (PathOf).
func (g *merger) pathOf(c *Candidate) string {
	if !c.Header.IsFinding() {
		return PathOf(g.o.Into, c.Script)
	}
	h := c.Header
	if c.Signature != "" {
		h.Signature = c.Signature
	}
	return filepath.Join(g.o.Into, c.Script.Subsystem, BaseName(&Finding{Header: h, Script: c.Script})+Ext)
}

// report lists the signatures tonight's inputs showed: new ones (with
// their scripts) and known ones seen again.
func (g *merger) report() {
	var sigs []string
	for sig := range g.tonight {
		sigs = append(sigs, sig)
	}
	sort.Strings(sigs)
	for _, sig := range sigs {
		r := g.m.Find(sig)
		s := Seen{Record: *r, Tonight: g.tonight[sig]}
		if g.fresh[sig] {
			if text, err := os.ReadFile(filepath.Join(g.o.Into, filepath.FromSlash(r.Script))); err == nil {
				s.Text = string(text)
			}
			g.rep.New = append(g.rep.New, s)
			continue
		}
		g.rep.Again = append(g.rep.Again, s)
	}
}
