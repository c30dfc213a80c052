package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// ManifestName is the file, at the top of a corpus directory, that lists
// every signature a merge has seen.
const ManifestName = "manifest.json"

// Manifest is the record of every signature ever merged into a corpus.
type Manifest struct {
	Signatures []Record `json:"signatures"`
}

// Record is one signature: its smallest script and its history.
type Record struct {
	Signature string   `json:"signature"`
	Kind      string   `json:"kind"`
	Subsystem string   `json:"subsystem"`
	Pair      string   `json:"pair"`   // "A,B", as recorded
	Script    string   `json:"script"` // relative to the corpus directory
	Ops       int      `json:"ops"`
	FirstSeen string   `json:"first_seen"` // YYYY-MM-DD ("" before any merge saw it)
	LastSeen  string   `json:"last_seen"`
	Hits      int      `json:"hits"`    // summed over every run that reported it
	Kernels   []string `json:"kernels"` // the kernel releases (uname -r) it was seen on
	Flaky     bool     `json:"flaky"`
}

// ReadManifest reads dir's manifest; a missing one is an empty manifest.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("corpus manifest: %w", err)
	}
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("corpus manifest %s: %w", filepath.Join(dir, ManifestName), err)
	}
	return m, nil
}

// Write stores the manifest in dir, signatures sorted, as one step: a
// write that fails or is killed half-way leaves the previous manifest whole.
func (m *Manifest) Write(dir string) error {
	if m.Signatures == nil {
		m.Signatures = []Record{}
	}
	sort.Slice(m.Signatures, func(i, j int) bool { return m.Signatures[i].Signature < m.Signatures[j].Signature })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("corpus manifest: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, ManifestName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("corpus manifest: %w", err)
	}
	return nil
}

// Find returns the record of sig, or nil.
func (m *Manifest) Find(sig string) *Record {
	for i := range m.Signatures {
		if m.Signatures[i].Signature == sig {
			return &m.Signatures[i]
		}
	}
	return nil
}

// Seen adds one sighting to the record: hits, the date and the kernel.
func (r *Record) Seen(hits int, date, kernel string) {
	r.Hits += hits
	if date != "" && (r.FirstSeen == "" || date < r.FirstSeen) {
		r.FirstSeen = date
	}
	if date > r.LastSeen {
		r.LastSeen = date
	}
	if kernel != "" && !slices.Contains(r.Kernels, kernel) {
		r.Kernels = append(r.Kernels, kernel)
		sort.Strings(r.Kernels)
	}
}
