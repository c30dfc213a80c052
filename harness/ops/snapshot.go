package ops

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SnapshotGroup is one part of a snapshot in its canonical text: what a
// subsystem can observe of the final state. Equivalence compares snapshots
// group by group, text to text, so a field a group does not print is a
// field nobody compares (a test perturbs every field to make sure there is
// none).
type SnapshotGroup struct {
	Name string
	// Subsystem is the subsystem whose operations the group shows: a
	// script is compared on the groups of the subsystems it uses.
	Subsystem string
	Text      string
}

// snapshotPart writes one group of a snapshot.
type snapshotPart struct {
	rank      int
	name      string
	subsystem string
	format    func(s *Snapshot, b *strings.Builder)
}

var snapshotParts []snapshotPart

// registerSnapshotPart adds a group to every snapshot's text; each
// subsystem's file calls it from init, with a rank that fixes the order.
func registerSnapshotPart(p snapshotPart) {
	snapshotParts = append(snapshotParts, p)
	sort.Slice(snapshotParts, func(i, j int) bool { return snapshotParts[i].rank < snapshotParts[j].rank })
}

// SnapshotGroups returns the canonical text of every group of s, in a fixed
// order.
func SnapshotGroups(s Snapshot) []SnapshotGroup {
	out := make([]SnapshotGroup, len(snapshotParts))
	for i, p := range snapshotParts {
		var b strings.Builder
		p.format(&s, &b)
		out[i] = SnapshotGroup{Name: p.name, Subsystem: p.subsystem, Text: b.String()}
	}
	return out
}

// FormatSnapshot writes the canonical text of a whole snapshot, group by
// group.
func FormatSnapshot(s Snapshot) string {
	var b strings.Builder
	for _, g := range SnapshotGroups(s) {
		fmt.Fprintf(&b, "[%s]\n%s", g.Name, g.Text)
	}
	return b.String()
}

func init() {
	for i, t := range IPCTypes {
		t := t
		registerSnapshotPart(snapshotPart{rank: 10 + i, name: t.String() + " ids", subsystem: "ids", format: func(s *Snapshot, b *strings.Builder) {
			ts := s.IDs[t]
			fmt.Fprintf(b, "limit=%d next_id=%d max_idx=%d objects=%d\n", ts.Limit, ts.NextID, ts.MaxIdx, len(ts.Objects))
			for _, o := range ts.Objects {
				fmt.Fprintf(b, "  id=%d key=%s mode=%04o owner=%d size=%d\n", o.ID, formatKey(o.Key), o.Mode, o.Owner, o.Size)
			}
			fmt.Fprintf(b, "rows=%d (%s)\n", len(s.Rows[t]), strings.Join(RowColumns(t), " "))
			for _, r := range s.Rows[t] {
				fmt.Fprintf(b, "  %s\n", FormatRow(t, r))
			}
		}})
	}
	registerSnapshotPart(snapshotPart{rank: 60, name: "namespaces", subsystem: "tasks", format: formatNamespaces})
	registerSnapshotPart(snapshotPart{rank: 20, name: "shm", subsystem: "shm", format: func(s *Snapshot, b *strings.Builder) {
		fmt.Fprintf(b, "shm_rmid_forced=%d shm_tot=%d attachments=%d\n", s.Shm.RmidForced, s.Shm.Tot, len(s.Shm.Attachments))
		for _, a := range s.Shm.Attachments {
			fmt.Fprintf(b, "  a%d task=%s id=%d", a.Att, a.Task, a.ID)
			if a.At != 0 {
				fmt.Fprintf(b, " at=w:%d", a.At-1)
			}
			if a.Pages != 0 {
				fmt.Fprintf(b, " pages=%d", a.Pages)
			}
			if a.NS != 0 {
				fmt.Fprintf(b, " ns=%d", a.NS)
			}
			b.WriteString("\n")
		}
	}})
	registerSnapshotPart(snapshotPart{rank: 30, name: "msg queues", subsystem: "msg", format: func(s *Snapshot, b *strings.Builder) {
		fmt.Fprintf(b, "queues=%d\n", len(s.Queues))
		for _, q := range s.Queues {
			fmt.Fprintf(b, "  id=%d qbytes=%d senders=%v receivers=%v msgs=%d\n", q.ID, q.Qbytes, q.Senders, q.Receivers, len(q.Msgs))
			for _, m := range q.Msgs {
				fmt.Fprintf(b, "    %s\n", formatMessage(m))
			}
		}
	}})
}

// SubsystemsOf lists the subsystems whose operations a script uses (with
// ids, whose listings every IPC script changes, when it uses any IPC
// subsystem): the snapshot groups a comparison of it looks at. An empty
// script uses them all.
func SubsystemsOf(script []Op) map[string]bool {
	out := map[string]bool{}
	for _, op := range script {
		if s := Spec(op.Kind); s != nil {
			out[s.Subsystem] = true
			if s.typed() {
				out["ids"] = true
			}
		}
	}
	if len(out) == 0 {
		for _, p := range snapshotParts {
			out[p.subsystem] = true
		}
	}
	return out
}

// formatNamespaces writes the namespaces other than the script's: for each,
// its tasks, then its IPC groups as the script's own are written.
func formatNamespaces(s *Snapshot, b *strings.Builder) {
	fmt.Fprintf(b, "namespaces=%d\n", len(s.Namespaces))
	for _, n := range s.Namespaces {
		var tasks []string
		for t := range NumTasks {
			if n.Tasks&(1<<t) != 0 {
				tasks = append(tasks, "t"+strconv.Itoa(t))
			}
		}
		fmt.Fprintf(b, "ns%d tasks=%s\n", n.Seq, strings.Join(tasks, ","))
		inner := Snapshot{IDs: n.IDs, Rows: n.Rows, Shm: ShmState{RmidForced: n.RmidForced, Tot: n.ShmTot}, Queues: n.Queues, Sems: n.Sems, SemLimits: n.SemLimits}
		for _, p := range snapshotParts {
			if p.subsystem == "vma" || p.subsystem == "tasks" {
				continue
			}
			var g strings.Builder
			p.format(&inner, &g)
			for _, line := range strings.SplitAfter(g.String(), "\n") {
				if line != "" {
					b.WriteString("  " + line)
				}
			}
		}
	}
}
