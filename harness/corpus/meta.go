package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SummaryName is the file a nightly shard writes beside its findings: the
// compare --json object plus when and where it ran.
const SummaryName = "summary.json"

// shardMeta is what a merge reads from a shard's summary.json.
type shardMeta struct {
	Shard
	Findings []struct {
		Script string `json:"script"`
		Hits   int    `json:"hits"`
	} `json:"findings"`
	found bool
}

// meta returns the summary of the shard that holds file: the nearest
// summary.json above it, up to the input directory root.
func (g *merger) meta(root, file string) (shardMeta, error) {
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		m, ok := g.metaDirs[dir]
		if !ok {
			var err error
			if m, err = readShardMeta(dir); err != nil {
				return m, err
			}
			g.metaDirs[dir] = m
		}
		if m.found || dir == filepath.Clean(root) || dir == filepath.Dir(dir) {
			return m, nil
		}
	}
}

func readShardMeta(dir string) (shardMeta, error) {
	var m shardMeta
	data, err := os.ReadFile(filepath.Join(dir, SummaryName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("corpus merge: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("corpus merge: %s: %w", filepath.Join(dir, SummaryName), err)
	}
	m.found = true
	m.Dir = dir
	return m, nil
}

// Shard is one input's summary.json, as a merge report lists it.
type Shard struct {
	Dir         string          `json:"dir"`
	Shard       json.RawMessage `json:"shard"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Status      string          `json:"status"`
	Reason      string          `json:"reason"`
	Checks      int             `json:"checks"`
	Divergences int             `json:"divergences"`
	Failures    int             `json:"plugin_failures"`
	Seconds     float64         `json:"seconds"`
	Seed        json.RawMessage `json:"seed"`
	Date        string          `json:"date"`
	Kernel      string          `json:"kernel"`
}

// sighting is what the summary, or else the file's own header, says of
// one finding file: its hits (1 if neither says), the date (the file's
// own modification date if neither says) and the kernel.
func (m shardMeta) sighting(file string, h Header, today string) Sighting {
	s := Sighting{Hits: 1, Date: m.Date, Kernel: m.Kernel}
	if h.Hits > 0 {
		s.Hits = h.Hits
	}
	for _, f := range m.Findings {
		if filepath.Base(f.Script) == filepath.Base(file) && f.Hits > 0 {
			s.Hits = f.Hits
		}
	}
	if s.Kernel == "" {
		s.Kernel = h.Kernel
	}
	if s.Date == "" && len(h.Date) >= 10 {
		s.Date = h.Date[:10]
	}
	if s.Date == "" {
		s.Date = today
		if fi, err := os.Stat(file); err == nil {
			s.Date = fi.ModTime().UTC().Format("2006-01-02")
		}
	}
	return s
}

// firstLine keeps an error to one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
