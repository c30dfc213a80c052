package ops

import "strings"

// Difference is what differs between two observations of one part of the
// state, wherever it was seen: at a step whose result shows that part (a
// layout shows the address space, a list with rows a listing) or in the
// final state. A divergence's signature carries it (harness/runner's
// Signature), so that one fact seen at a step in one script and in the
// final state of another is one signature, and distinct facts are distinct
// ones.
type Difference struct {
	// Where names the part: "space" (the address space of the vma
	// subsystem) or "listing/T" (/proc/sysvipc/T of the IPC type T).
	Where string
	// What names the difference in it: VMADifference's words for an
	// address space, ListingDifference's for a listing.
	What string
}

// IsZero reports whether d names nothing (no finer account).
func (d Difference) IsZero() bool { return d.What == "" }

// String is "where/what", "" for the zero Difference.
func (d Difference) String() string {
	if d.IsZero() {
		return ""
	}
	return d.Where + "/" + d.What
}

// StepDifference names what differs between two successful results of op
// whose texts differ, for the operations whose result shows part of the
// state (a layout, a list); the zero Difference for the others.
func StepDifference(op Op, a, b Result) Difference {
	switch {
	case op.Kind == KindLayout:
		return Difference{"space", VMADifference(a.Layout, b.Layout)}
	case op.Kind == KindList && op.Rows:
		return Difference{"listing/" + op.Type.String(), ListingDifference(op.Type, a.Rows, b.Rows)}
	case op.Kind == KindList:
		return Difference{"listing/" + op.Type.String(), entriesDifference(a.List, b.List)}
	}
	return Difference{}
}

// FinalDifference names what differs in the snapshot group named group
// between two final states: the address space ("vma"), a listing ("shm
// ids": its rows); the zero Difference for a group without a finer
// account.
func FinalDifference(group string, a, b Snapshot) Difference {
	if group == "vma" {
		return Difference{"space", VMADifference(a.VMA, b.VMA)}
	}
	if t, ok := groupType(group); ok {
		return Difference{"listing/" + t.String(), ListingDifference(t, a.Rows[t], b.Rows[t])}
	}
	return Difference{}
}

// Anomaly names what is wrong with one final state on its own, where a
// word says it better than the invariant it breaks: a listing that shows
// one object twice ("listing/shm", "dup-row"). The zero Difference when
// there is no such word.
func Anomaly(s Snapshot) Difference {
	for _, t := range IPCTypes {
		if _, dup := duplicateID(s.Rows[t]); dup {
			return Difference{"listing/" + t.String(), "dup-row"}
		}
	}
	return Difference{}
}

// ListingDifference names the first thing that differs between two
// listings of /proc/sysvipc/<t>, A's and B's, in their order:
//
//	dup-row   one of them shows an object (an id) twice
//	rows      they show different numbers of objects
//	COLUMN    the first column, in /proc's order, that differs in some
//	          row ("nattch", "perms"; the id column last: under a
//	          renaming of ids the ids differ anyway)
//
// and "" when they are equal.
func ListingDifference(t IPCType, a, b []Row) string {
	_, dupA := duplicateID(a)
	_, dupB := duplicateID(b)
	switch {
	case dupA || dupB:
		return "dup-row"
	case len(a) != len(b):
		return "rows"
	}
	cols := RowColumns(t)
	idCol := -1
	for c := range cols {
		if c == 1 { // the id column (msqid, semid, shmid)
			idCol = c
			continue
		}
		for i := range a {
			if columnText(t, a[i], c) != columnText(t, b[i], c) {
				return cols[c]
			}
		}
	}
	for i := range a {
		if idCol >= 0 && columnText(t, a[i], idCol) != columnText(t, b[i], idCol) {
			return cols[idCol]
		}
	}
	return ""
}

// columnText is the text of column c of row r, as /proc shows it.
func columnText(t IPCType, r Row, c int) string {
	f := strings.Fields(FormatRow(t, r))
	if c < len(f) {
		return f[c]
	}
	return ""
}

// entriesDifference is ListingDifference of id:key listings.
func entriesDifference(a, b []Entry) string {
	ids := func(es []Entry) []Row {
		rs := make([]Row, len(es))
		for i, e := range es {
			rs[i] = Row{ID: e.ID, Key: e.Key}
		}
		return rs
	}
	_, dupA := duplicateID(ids(a))
	_, dupB := duplicateID(ids(b))
	switch {
	case dupA || dupB:
		return "dup-row"
	case len(a) != len(b):
		return "rows"
	}
	for i := range a {
		if a[i].Key != b[i].Key {
			return "key"
		}
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return "id"
		}
	}
	return ""
}

// duplicateID returns an id that rows show twice.
func duplicateID(rows []Row) (int64, bool) {
	seen := make(map[int64]bool, len(rows))
	for _, r := range rows {
		if seen[r.ID] {
			return r.ID, true
		}
		seen[r.ID] = true
	}
	return 0, false
}

// groupType is the IPC type of a listing group ("shm ids"), if it is one.
func groupType(group string) (IPCType, bool) {
	name, ok := strings.CutSuffix(group, " ids")
	if !ok {
		return 0, false
	}
	t, err := ParseIPCType(name)
	return t, err == nil
}
