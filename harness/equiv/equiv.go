// Package equiv decides whether two implementations' outcomes of one script
// agree, under a named relation: exact equality, or equality up to a
// consistent renaming of ids (what comparing the legacy and the cyclic
// allocator needs, since they number the same objects differently).
//
// Equality has one definition: the canonical text of results and snapshot
// groups (ops.FormatResult, ops.SnapshotGroups). Whatever the text shows is
// compared; a field it does not show is not observable. A deep-equality
// check comes first only to skip the formatting when the values are
// identical, which can never hide a difference the text would show.
package equiv

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Relation names an equivalence.
type Relation string

// The relations.
const (
	Exact      Relation = "exact"
	IDsRenamed Relation = "ids-renamed"
)

// Relations lists every relation.
var Relations = []Relation{Exact, IDsRenamed}

// Alternatives names the relations rs, joined by " or ".
func Alternatives(rs []Relation) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r))
	}
	return strings.Join(out, " or ")
}

// Parse reads a relation name.
func Parse(s string) (Relation, error) {
	for _, r := range Relations {
		if string(r) == s {
			return r, nil
		}
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

// Compare checks that b's outcome of script agrees with a's under rel. It
// returns nil when they agree.
func Compare(rel Relation, script []ops.Op, a, b ops.Outcome) *Divergence {
	if len(a.Results) != len(b.Results) {
		return &Divergence{Step: min(len(a.Results), len(b.Results)), Reason: fmt.Sprintf("A returned %d results, B %d", len(a.Results), len(b.Results))}
	}
	c := NewComparer(rel)
	for _, op := range script {
		c.meet(op) // the whole script's subsystems, results or not
	}
	for i, op := range script {
		if i >= len(a.Results) {
			break
		}
		if d := c.stepOf(op, &a.Results[i], &b.Results[i]); d != nil {
			return d
		}
	}
	return c.finalOf(&a.Snapshot, &b.Snapshot)
}

// Comparer is Compare a step at a time, for outcomes that come in pieces (a
// long script replayed in batches): it keeps only what comparing the steps
// still to come needs (the renaming of ids, the subsystems met), never the
// steps themselves. Feeding it every step and then the snapshots gives
// what Compare gives.
type Comparer struct {
	ren  *renaming
	step int
	div  *Divergence
	subs map[string]bool
	seen [256]bool // the kinds whose subsystems are in subs
}

// NewComparer starts comparing two outcomes of one script under rel.
func NewComparer(rel Relation) *Comparer {
	c := &Comparer{subs: map[string]bool{}}
	if rel == IDsRenamed {
		c.ren = newRenaming()
	}
	return c
}

// Step compares the results of the script's next operation, and returns
// the first divergence once there is one (the steps after it are not
// compared).
func (c *Comparer) Step(op ops.Op, ra, rb ops.Result) *Divergence {
	return c.stepOf(op, &ra, &rb)
}

// stepOf is Step on results held elsewhere (Compare's, in their slices): a
// Result is large, and a copy of it that the comparison's reflection sees
// would be allocated on the heap.
func (c *Comparer) stepOf(op ops.Op, ra, rb *ops.Result) *Divergence {
	if c.div != nil {
		return c.div
	}
	c.meet(op)
	if reason := compareResult(c.ren, op, ra, rb); reason != "" {
		c.div = &Divergence{Step: c.step, Reason: reason}
		return c.div
	}
	if c.ren != nil {
		c.ren.follow(op, *ra, *rb)
	}
	c.step++
	return nil
}

// meet adds the subsystems of op's kind to those the snapshots compare.
func (c *Comparer) meet(op ops.Op) {
	if c.seen[op.Kind] {
		return
	}
	c.seen[op.Kind] = true
	if ops.Spec(op.Kind) != nil {
		for s := range ops.SubsystemsOf([]ops.Op{op}) {
			c.subs[s] = true
		}
	}
}

// Final compares the final snapshots, the groups of the subsystems of the
// steps compared, unless a step diverged: it returns the first divergence.
func (c *Comparer) Final(sa, sb ops.Snapshot) *Divergence {
	return c.finalOf(&sa, &sb)
}

// finalOf is Final on snapshots held elsewhere (see stepOf).
func (c *Comparer) finalOf(sa, sb *ops.Snapshot) *Divergence {
	if c.div != nil {
		return c.div
	}
	subs := c.subs
	if len(subs) == 0 {
		subs = ops.SubsystemsOf(nil)
	}
	if reason := compareSnapshots(c.ren, subs, sa, sb); reason != "" {
		c.div = &Divergence{Step: -1, Reason: reason}
	}
	return c.div
}

// SameResult reports whether two results of op are equal: the same
// canonical text.
func SameResult(op ops.Op, ra, rb ops.Result) bool {
	return sameResult(op, &ra, &rb)
}

func sameResult(op ops.Op, ra, rb *ops.Result) bool {
	return sameResultValue(ra, rb) || ops.FormatResult(op, *ra) == ops.FormatResult(op, *rb)
}

func compareResult(ren *renaming, op ops.Op, ra, rb *ops.Result) string {
	differ := func(note string) string {
		return fmt.Sprintf("%s: A -> %s, B -> %s%s", ops.FormatOp(op), ops.FormatResult(op, *ra), ops.FormatResult(op, *rb), note)
	}
	if ren == nil || ra.Err != ops.OK || rb.Err != ops.OK || ra.Blocked || rb.Blocked {
		if !sameResult(op, ra, rb) {
			return differ("")
		}
		return ""
	}
	spec := ops.Spec(op.Kind)
	switch {
	case spec.Binds == ops.ClassObject:
		if !ren.pair(op.Type, ra.ID, rb.ID) {
			return differ(" (not a consistent renaming of earlier ids)")
		}
		if ops.FormatResult(op, ops.Result{Done: ra.Done}) != ops.FormatResult(op, ops.Result{Done: rb.Done}) {
			return differ("")
		}
	case spec.OpaqueIDs != nil && spec.OpaqueIDs(op):
		// The result names slots or ids no renaming relates: only the
		// outcome and the completions compare.
		if ops.FormatResult(op, ops.Result{Done: ra.Done}) != ops.FormatResult(op, ops.Result{Done: rb.Done}) {
			return differ("")
		}
	default:
		if ops.FormatResult(op, renamedResult(ren, op.Type, *ra)) != ops.FormatResult(op, renamedResult(nil, op.Type, *rb)) {
			return differ(" (not the same objects up to renaming)")
		}
	}
	return ""
}

// compareSnapshots compares two final states group by group, the groups of
// the subsystems the script uses.
func compareSnapshots(ren *renaming, subs map[string]bool, pa, pb *ops.Snapshot) string {
	if ren == nil && sameSnapshotValue(pa, pb) {
		return ""
	}
	sa, sb := *pa, *pb
	if ren != nil {
		sa, sb = renamedSnapshot(ren, sa), renamedSnapshot(nil, sb)
	}
	ga, gb := ops.SnapshotGroups(sa), ops.SnapshotGroups(sb)
	for i := range ga {
		if subs[ga[i].Subsystem] && ga[i].Text != gb[i].Text {
			la, lb := firstDifference(ga[i].Text, gb[i].Text)
			return fmt.Sprintf("%s: A has %q where B has %q", ga[i].Name, la, lb)
		}
	}
	return ""
}

// firstDifference returns the first line where two texts differ.
func firstDifference(a, b string) (string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return strings.TrimSpace(x), strings.TrimSpace(y)
		}
	}
	return "", ""
}

// renaming is a bijection between the ids of A's and B's objects, per IPC
// type. IPC_RMID retires a pair rather than dropping it: a segment still
// attached lives on (SHM_DEST) and keeps its ids, and a retired pair still
// renames it; a later object that reuses either id replaces the pair, since
// an id is reused only once its object is gone.
type renaming struct {
	aToB [len(ops.IPCTypes)]map[int64]int64
	bToA [len(ops.IPCTypes)]map[int64]int64
	// retired holds the pairs (by A's id) whose object was removed.
	retired [len(ops.IPCTypes)]map[int64]bool
	// handles follows each side's handle bindings, to know which pair an
	// IPC_RMID through a handle removed.
	handles [2]ops.Handles
}

func newRenaming() *renaming {
	r := &renaming{}
	for _, t := range ops.IPCTypes {
		r.aToB[t], r.bToA[t], r.retired[t] = map[int64]int64{}, map[int64]int64{}, map[int64]bool{}
	}
	r.handles = [2]ops.Handles{{}, {}}
	return r
}

// follow updates the handle bindings and drops the pair an IPC_RMID removed.
func (r *renaming) follow(op ops.Op, ra, rb ops.Result) {
	if s := ops.Spec(op.Kind); s != nil && s.Removes && ra.Err == ops.OK && rb.Err == ops.OK {
		a, b := r.handles[0].Resolve(op).Obj.ID, r.handles[1].Resolve(op).Obj.ID
		if x, ok := r.aToB[op.Type][a]; ok && x == b {
			r.retired[op.Type][a] = true
		}
	}
	r.handles[0].Record(op, ra)
	r.handles[1].Record(op, rb)
}

// drop forgets the pair a ↔ b of a removed object whose id was reused.
func (r *renaming) drop(t ops.IPCType, a, b int64) {
	delete(r.aToB[t], a)
	delete(r.bToA[t], b)
	delete(r.retired[t], a)
}

// pair records a ↔ b (the ids a get gave), reporting false if it
// contradicts an earlier pairing of a live object.
func (r *renaming) pair(t ops.IPCType, a, b int64) bool {
	if x, ok := r.aToB[t][a]; ok && x != b {
		if !r.retired[t][a] {
			return false
		}
		r.drop(t, a, x)
	}
	if x, ok := r.bToA[t][b]; ok && x != a {
		if !r.retired[t][x] {
			return false
		}
		r.drop(t, x, b)
	}
	// A get names a live object: a pair it makes or meets again is live.
	delete(r.retired[t], a)
	r.aToB[t][a], r.bToA[t][b] = b, a
	return true
}

// id maps one of A's ids of type t into B's (nil renaming: unchanged; an
// id never seen in a result stays as it is, and so differs unless B has the
// same).
func (r *renaming) id(t ops.IPCType, id int64) int64 {
	if r == nil {
		return id
	}
	if b, ok := r.aToB[t][id]; ok {
		return b
	}
	return id
}

// renamedResult maps the ids of a result into B's and sorts its listings:
// their order follows the idx each allocator chose, so only the sets compare.
func renamedResult(ren *renaming, t ops.IPCType, r ops.Result) ops.Result {
	r.List = renamedSorted(ren, t, r.List, func(e *ops.Entry) *int64 { return &e.ID })
	r.Rows = renamedSorted(ren, t, r.Rows, rowID)
	r.Row.ID = ren.id(t, r.Row.ID)
	return r
}

// renamedSnapshot maps every id of a snapshot into B's and sorts every list
// of objects by id. max_idx is left out: it is a slot index, which no
// renaming of ids relates (as IPC_INFO's result, see ops.KindSpec.OpaqueIDs).
func renamedSnapshot(ren *renaming, s ops.Snapshot) ops.Snapshot {
	for _, t := range ops.IPCTypes {
		s.IDs[t].MaxIdx = 0
		s.IDs[t].Objects = renamedSorted(ren, t, s.IDs[t].Objects, func(o *ops.Object) *int64 { return &o.ID })
		s.Rows[t] = renamedSorted(ren, t, s.Rows[t], rowID)
	}
	s.Shm.Attachments = slices.Clone(s.Shm.Attachments)
	for i := range s.Shm.Attachments {
		s.Shm.Attachments[i].ID = ren.id(ops.Shm, s.Shm.Attachments[i].ID)
	}
	ops.SortAttachments(s.Shm.Attachments)
	s.Queues = renamedSorted(ren, ops.Msg, s.Queues, func(q *ops.QueueState) *int64 { return &q.ID })
	return s
}

func rowID(r *ops.Row) *int64 { return &r.ID }

// renamedSorted copies items, maps A's ids into B's through ren and sorts
// the copy by id.
func renamedSorted[T any](ren *renaming, t ops.IPCType, items []T, id func(*T) *int64) []T {
	out := slices.Clone(items)
	for i := range out {
		*id(&out[i]) = ren.id(t, *id(&out[i]))
	}
	slices.SortStableFunc(out, func(x, y T) int { return cmp.Compare(*id(&x), *id(&y)) })
	return out
}
