package corpus

import (
	"fmt"
	"io"
	"strings"
)

// Markdown renders the report for a human (a workflow's step summary, an
// issue): new signatures first, each with its minimal script, then the
// known ones seen again, then what happened to every input file.
func (r *MergeReport) Markdown() string {
	var b strings.Builder
	b.WriteString("# ipcfuzz nightly merge\n\n")
	fmt.Fprintf(&b, "## New signatures (%d)\n\n", len(r.New))
	if len(r.New) == 0 {
		b.WriteString("None.\n\n")
	}
	for _, s := range r.New {
		fmt.Fprintf(&b, "### `%s`\n\n", s.Signature)
		fmt.Fprintf(&b, "%d hits on %s (%s), pair %s, kernel %s%s. Script `%s`:\n\n", s.Tonight, s.LastSeen, s.Kind, s.Pair,
			strings.Join(s.Kernels, ", "), flakyNote(s.Flaky), s.Script)
		fmt.Fprintf(&b, "```\n%s```\n\n", s.Text)
	}
	fmt.Fprintf(&b, "## Seen again (%d)\n\n", len(r.Again))
	if len(r.Again) > 0 {
		b.WriteString("| signature | hits tonight | hits in all | first seen | last seen | script |\n|---|---|---|---|---|---|\n")
		for _, s := range r.Again {
			fmt.Fprintf(&b, "| `%s` | %d | %d | %s | %s | `%s` |\n", s.Signature, s.Tonight, s.Hits, s.FirstSeen, s.LastSeen, s.Script)
		}
		b.WriteString("\n")
	}
	b.WriteString(r.shardsTable())
	b.WriteString(r.countsTable())
	return b.String()
}

// shardsTable lists how each input shard ended.
func (r *MergeReport) shardsTable() string {
	if len(r.Shards) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Shards\n\n| shard | name | status | checks | divergences | plugin failures | seconds | seed | kernel |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Shards {
		status := s.Status
		if s.Reason != "" {
			status += ": " + s.Reason
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %.0f | %s | %s |\n", s.Shard, s.Name, status, s.Checks, s.Divergences, s.Failures, s.Seconds, s.Seed, s.Kernel)
	}
	b.WriteString("\n")
	return b.String()
}

func flakyNote(flaky bool) string {
	if flaky {
		return ", FLAKY"
	}
	return ""
}

// countsTable says what happened to the input files.
func (r *MergeReport) countsTable() string {
	var b strings.Builder
	b.WriteString("## Input files\n\n| | files |\n|---|---|\n")
	rows := []struct {
		name string
		n    int
	}{
		{"read", r.Files}, {"added to the corpus", len(r.Added)}, {"already in the corpus", r.Known},
		{"duplicates of another input", r.Duplicates}, {"larger than the kept script of their signature", r.Larger},
		{"kept but flaky", r.Flaky}, {"dropped: did not reproduce", r.NotReproduced},
		{"dropped: stale", r.Stale}, {"dropped: unparsable", r.Unparsable},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %d |\n", row.name, row.n)
	}
	if len(r.Dropped) > 0 {
		b.WriteString("\nDropped:\n\n")
		for _, d := range r.Dropped {
			fmt.Fprintf(&b, "- `%s`: %s\n", d.Path, d.Why)
		}
	}
	return b.String()
}

// WriteText prints the report for people: a line of counts for the
// corpus into, then one line per new signature, per signature seen again
// and per dropped file.
func (r *MergeReport) WriteText(w io.Writer, into string) {
	fmt.Fprintf(w, "merged %d files into %s: %d added, %d already there, %d duplicates, %d larger than their signature's script, %d flaky (kept, marked); dropped %d not reproduced, %d stale, %d unparsable\n",
		r.Files, into, len(r.Added), r.Known, r.Duplicates, r.Larger, r.Flaky, r.NotReproduced, r.Stale, r.Unparsable)
	for _, s := range r.New {
		fmt.Fprintf(w, "new   %s: %d hits, %d ops, %s\n", s.Signature, s.Tonight, s.Ops, s.Script)
	}
	for _, s := range r.Again {
		fmt.Fprintf(w, "again %s: %d hits tonight, %d in all, first seen %s\n", s.Signature, s.Tonight, s.Hits, s.FirstSeen)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "drop  %s: %s\n", d.Path, d.Why)
	}
}
