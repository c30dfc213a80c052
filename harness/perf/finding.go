package perf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Kind is the kind a performance finding's first line names.
const Kind = "performance"

// Ext ends the name of a performance finding: it is a pattern, which
// `ipcfuzz complexity --workload FILE` measures.
const Ext = ".perf"

// Finding is a performance finding: the header of a finding file (format
// 2: how, where and when it was found, the pair, the signature, the hits),
// the verdict and the table of both sides' costs at the sizes.
type Finding struct {
	corpus.Header
	Verdict Verdict
	// Removed is how many operations the minimisation removed.
	Removed int
	// Table is complexity's table of the pattern on both sides.
	Table string
	// Replay is the command that judges the file again.
	Replay string
	// Metric names what was counted.
	Metric string
	// Threshold is the excess reported.
	Threshold float64
}

// Render writes the file text of a performance finding: the header lines of
// corpus.Finding (kind "performance", stated none), one note per verdict
// line, the table commented, then the pattern.
func Render(f *Finding) string {
	var b strings.Builder
	h := f.Header
	h.Relation = "" // a pattern is judged by its costs, not compared
	line := corpus.WriteHeader(&b, h, Kind, h.A, h.AInfo, h.B, h.BInfo)
	line("stated", "none")
	v := f.Verdict
	line("note", fmt.Sprintf("%s: B %s grows %s, A %s grows %s: faster by at least n^%.2f (the lower end of B's interval less the upper end of A's), above the threshold n^%.2f",
		f.Metric, h.B, v.B, h.A, v.A, v.Excess, f.Threshold))
	if f.Removed > 0 {
		line("note", fmt.Sprintf("minimised: %d operations removed", f.Removed))
	}
	line("note", "judge it again: "+f.Replay)
	if f.Table != "" {
		b.WriteString("#\n")
		for _, l := range strings.Split(strings.TrimRight(f.Table, "\n"), "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	b.WriteString(ops.FormatPattern(v.Pattern))
	return b.String()
}

// BaseName is the name, without the extension, a performance finding is
// stored under: its signature (without the subsystem), the pair and a hash
// of the pattern.
func BaseName(f *Finding) string {
	sig := strings.TrimPrefix(f.Signature, f.Verdict.Pattern.Subsystem+"/")
	sum := sha256.Sum256([]byte(ops.FormatPattern(f.Verdict.Pattern)))
	return strings.Join([]string{corpus.Slug(sig), corpus.SideSlug(f.A), corpus.SideSlug(f.B), hex.EncodeToString(sum[:6])}, "~")
}

// Store writes f under dir/<subsystem>/ as one step, never replacing
// another file, and returns its path.
func Store(dir string, f *Finding) (string, error) {
	return corpus.StoreText(dir, f.Verdict.Pattern.Subsystem, BaseName(f), Ext, Render(f))
}
