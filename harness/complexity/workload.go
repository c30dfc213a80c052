package complexity

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// DefaultPatternSizes are the sizes a pattern file is measured at when
// none are given.
const DefaultPatternSizes = "16..1024"

// maxPatternFile bounds what is read of a pattern file.
const maxPatternFile = 1 << 20

// IsPatternFile reports whether v names a pattern file (it ends in .perf
// or names a path) rather than a workload of ops.Workloads.
func IsPatternFile(v string) bool {
	return strings.HasSuffix(v, ".perf") || strings.ContainsRune(v, '/')
}

// ReadPatternFile reads a pattern file strictly (its first MiB), as
// ipcfuzz worst writes them, and returns its workload and its label: the
// file's base name without .perf.
func ReadPatternFile(path string) (ops.Workload, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	p, err := ops.ParsePattern(path, io.LimitReader(f, maxPatternFile))
	if err != nil {
		return "", "", err
	}
	return ops.PatternWorkload(p), strings.TrimSuffix(filepath.Base(path), ".perf"), nil
}

// DefaultSizes are a workload's own sizes, or DefaultPatternSizes for a
// pattern.
func DefaultSizes(w ops.Workload) string {
	if spec, err := ops.WorkloadOf(w); err == nil {
		return spec.Sizes
	}
	return DefaultPatternSizes
}

// Formats are the forms a report is written in (Write).
var Formats = []string{"table", "json", "benchstat"}

// Write writes a report in one of Formats: a table of metric, JSON, or
// benchstat's text.
func Write(w io.Writer, r *Report, format string, metric Metric) error {
	switch format {
	case "json":
		return WriteJSON(w, r)
	case "benchstat":
		return WriteBenchstat(w, r)
	case "table":
		return WriteTable(w, r, metric)
	}
	return fmt.Errorf("format %q: want table, json or benchstat", format)
}
