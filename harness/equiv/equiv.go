// Package equiv decides whether two implementations' outcomes of one script
// agree, under a named relation: exact equality, or equality up to a
// consistent renaming of ids (what comparing the legacy and the cyclic
// allocator needs, since they number the same objects differently).
package equiv

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Relation names an equivalence.
type Relation string

// The relations.
const (
	Exact      Relation = "exact"
	IDsRenamed Relation = "ids-renamed"
)

// Parse reads a relation name.
func Parse(s string) (Relation, error) {
	switch Relation(s) {
	case Exact, IDsRenamed:
		return Relation(s), nil
	}
	return "", fmt.Errorf("unknown equivalence %q (want exact or ids-renamed)", s)
}

// Divergence says where two outcomes first disagree.
type Divergence struct {
	Step   int // index of the first operation whose results disagree, or -1 for the final snapshot
	Reason string
}

func (d *Divergence) Error() string {
	if d.Step < 0 {
		return "final state differs: " + d.Reason
	}
	return fmt.Sprintf("step %d: %s", d.Step+1, d.Reason)
}

// renaming is a bijection between the ids of A's and B's live objects, per
// IPC type. A pair is dropped when its object is removed, so that a later
// object may reuse either id.
type renaming struct {
	aToB [len(ops.IPCTypes)]map[int64]int64
	bToA [len(ops.IPCTypes)]map[int64]int64
	// handles follows each side's handle bindings, to know which pair an
	// IPC_RMID through a handle removed.
	handles [2]ops.Handles
}

func newRenaming() *renaming {
	r := &renaming{}
	for _, t := range ops.IPCTypes {
		r.aToB[t], r.bToA[t] = map[int64]int64{}, map[int64]int64{}
	}
	r.handles = [2]ops.Handles{{}, {}}
	return r
}

// follow updates the handle bindings and drops the pair an IPC_RMID removed.
func (r *renaming) follow(op ops.Op, ra, rb ops.Result) {
	if op.Kind == ops.KindRmid && ra.Err == ops.OK && rb.Err == ops.OK {
		a, b := r.handles[0].Resolve(op).Obj.ID, r.handles[1].Resolve(op).Obj.ID
		if r.aToB[op.Type][a] == b {
			delete(r.aToB[op.Type], a)
			delete(r.bToA[op.Type], b)
		}
	}
	r.handles[0].Record(op, ra)
	r.handles[1].Record(op, rb)
}

// pair records a ↔ b, reporting false if it contradicts an earlier pairing.
func (r *renaming) pair(t ops.IPCType, a, b int64) bool {
	if x, ok := r.aToB[t][a]; ok && x != b {
		return false
	}
	if x, ok := r.bToA[t][b]; ok && x != a {
		return false
	}
	r.aToB[t][a], r.bToA[t][b] = b, a
	return true
}

// Compare checks that b's outcome of script agrees with a's under rel. It
// returns nil when they agree.
func Compare(rel Relation, script []ops.Op, a, b ops.Outcome) *Divergence {
	if len(a.Results) != len(b.Results) {
		return &Divergence{Step: min(len(a.Results), len(b.Results)), Reason: fmt.Sprintf("A returned %d results, B %d", len(a.Results), len(b.Results))}
	}
	var ren *renaming
	if rel == IDsRenamed {
		ren = newRenaming()
	}
	for i, op := range script {
		if i >= len(a.Results) {
			break
		}
		ra, rb := a.Results[i], b.Results[i]
		if reason := compareResult(ren, op, ra, rb); reason != "" {
			return &Divergence{Step: i, Reason: reason}
		}
		if ren != nil {
			ren.follow(op, ra, rb)
		}
	}
	if reason := compareSnapshots(ren, a.Snapshot, b.Snapshot); reason != "" {
		return &Divergence{Step: -1, Reason: reason}
	}
	return nil
}

// sameResult is exact equality of two results of one operation.
func sameResult(ra, rb ops.Result) bool {
	return ra.Err == rb.Err && ra.ID == rb.ID && ra.Obj == rb.Obj && slices.Equal(ra.List, rb.List) &&
		ra.Row == rb.Row && ra.Info == rb.Info && slices.Equal(ra.Rows, rb.Rows)
}

func compareResult(ren *renaming, op ops.Op, ra, rb ops.Result) string {
	if ren == nil && sameResult(ra, rb) {
		return ""
	}
	fa, fb := ops.FormatResult(op, ra), ops.FormatResult(op, rb)
	differ := func() string { return fmt.Sprintf("%s: A -> %s, B -> %s", ops.FormatOp(op), fa, fb) }
	if ren == nil || ra.Err != ops.OK || rb.Err != ops.OK {
		if fa != fb {
			return differ()
		}
		return ""
	}
	switch op.Kind {
	case ops.KindGet:
		if !ren.pair(op.Type, ra.ID, rb.ID) {
			return differ() + " (not a consistent renaming of earlier ids)"
		}
	case ops.KindList:
		if op.Rows {
			if !sameRowsUpToRenaming(ren, op.Type, ra.Rows, rb.Rows) {
				return differ() + " (not the same objects up to renaming)"
			}
			break
		}
		if !sameUpToRenaming(ren, op.Type, ra.List, rb.List) {
			return differ() + " (not the same objects up to renaming)"
		}
	case ops.KindShmctl:
		if op.Cmd == ops.ShmStat || op.Cmd == ops.ShmStatAny {
			// An index names different objects under two allocators;
			// only the outcome is comparable.
			if (ra.Err == ops.OK) != (rb.Err == ops.OK) {
				return differ()
			}
			break
		}
		if fa != fb {
			return differ()
		}
	default:
		if fa != fb {
			return differ()
		}
	}
	return ""
}

// sameUpToRenaming compares two listings as sets: their order follows the idx
// each allocator chose, so only membership is comparable.
func sameUpToRenaming(ren *renaming, t ops.IPCType, la, lb []ops.Entry) bool {
	if len(la) != len(lb) {
		return false
	}
	inB := make(map[ops.Entry]bool, len(lb))
	for _, e := range lb {
		inB[e] = true
	}
	for _, e := range la {
		id, ok := ren.aToB[t][e.ID]
		if !ok || !inB[ops.Entry{ID: id, Key: e.Key}] {
			return false
		}
	}
	return true
}

func compareSnapshots(ren *renaming, sa, sb ops.Snapshot) string {
	for _, t := range ops.IPCTypes {
		ta, tb := sa.IDs[t], sb.IDs[t]
		if ta.NextID != tb.NextID || ta.Limit != tb.Limit {
			return fmt.Sprintf("%s: A has next_id=%d limit=%d, B next_id=%d limit=%d", t, ta.NextID, ta.Limit, tb.NextID, tb.Limit)
		}
		oa, ob := ta.Objects, tb.Objects
		if ren != nil {
			oa = renamedSorted(ren, t, oa, objectID)
			ob = renamedSorted(nil, t, ob, objectID)
		}
		if !slices.Equal(oa, ob) {
			return fmt.Sprintf("%s objects: A has %s, B has %s", t, formatObjects(ta.Objects), formatObjects(tb.Objects))
		}
		ra, rb := sa.Rows[t], sb.Rows[t]
		if ren != nil {
			ra = renamedSorted(ren, t, ra, rowID)
			rb = renamedSorted(nil, t, rb, rowID)
		}
		if !slices.Equal(ra, rb) {
			return fmt.Sprintf("%s rows: A has %s, B has %s", t, formatRows(t, sa.Rows[t]), formatRows(t, sb.Rows[t]))
		}
	}
	ma, mb := sa.Shm, sb.Shm
	if ma.RmidForced != mb.RmidForced || ma.Tot != mb.Tot {
		return fmt.Sprintf("shm: A has shm_rmid_forced=%d shm_tot=%d, B shm_rmid_forced=%d shm_tot=%d", ma.RmidForced, ma.Tot, mb.RmidForced, mb.Tot)
	}
	aa, ab := ma.Attachments, mb.Attachments
	if ren != nil {
		aa = slices.Clone(aa)
		for i := range aa {
			if id, ok := ren.aToB[ops.Shm][aa[i].ID]; ok {
				aa[i].ID = id
			}
		}
	}
	if !slices.Equal(aa, ab) {
		return fmt.Sprintf("shm attachments: A has %v, B has %v", ma.Attachments, mb.Attachments)
	}
	return ""
}

// sameRowsUpToRenaming compares two row listings as sets, A's ids renamed.
func sameRowsUpToRenaming(ren *renaming, t ops.IPCType, la, lb []ops.Row) bool {
	if len(la) != len(lb) {
		return false
	}
	ra, rb := renamedSorted(ren, t, la, rowID), renamedSorted(nil, t, lb, rowID)
	return slices.Equal(ra, rb)
}

func formatRows(t ops.IPCType, rows []ops.Row) string {
	if len(rows) > 8 {
		return fmt.Sprintf("%d rows", len(rows))
	}
	s := "["
	for i, r := range rows {
		if i > 0 {
			s += " | "
		}
		s += ops.FormatRow(t, r)
	}
	return s + "]"
}

func formatObjects(objs []ops.Object) string {
	if len(objs) > 8 {
		return fmt.Sprintf("%d objects", len(objs))
	}
	s := "["
	for i, o := range objs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:0x%x/%04o/%d/%d", o.ID, uint32(o.Key), o.Mode, o.Owner, o.Size)
	}
	return s + "]"
}

func objectID(o *ops.Object) *int64 { return &o.ID }
func rowID(r *ops.Row) *int64       { return &r.ID }

// renamedSorted copies items, maps A's ids into B's through ren (nil: no
// renaming; an id never seen in a result stays as it is, and so differs
// unless B has the same) and sorts the copy by id: the order of objects
// follows the idx each allocator chose, so only the sets compare.
func renamedSorted[T any](ren *renaming, t ops.IPCType, items []T, id func(*T) *int64) []T {
	out := slices.Clone(items)
	for i := range out {
		if ren == nil {
			break
		}
		if b, ok := ren.aToB[t][*id(&out[i])]; ok {
			*id(&out[i]) = b
		}
	}
	slices.SortFunc(out, func(x, y T) int { return cmp.Compare(*id(&x), *id(&y)) })
	return out
}
