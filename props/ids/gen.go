// Package ids draws scripts for the ids subsystem (the SysV IPC id allocator
// and /proc/sysvipc listings) and holds its properties: the rapid state
// machine, the gopter commands and FuzzIDs.
//
// One generator serves every engine. It draws from a Source (rapid's *T,
// gopter's random generator, or go test -fuzz bytes through rapid), keeps a
// shadow of what the script should have done so far, and chooses explicitly
// among the actions that make sense in that state (never by skipping, see
// rapid#57): existing ids, stale ids, keys in use, near-limit states and
// deliberately invalid arguments.
package ids

import (
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Source is where the generator's choices come from. Intn returns a value in
// [0, n); label names the choice for engines that log their draws.
type Source interface {
	Intn(n int, label string) int
}

// object is the shadow of one object a script created.
type object struct {
	key   int32
	mode  uint16
	owner uint32
	size  int64
	live  bool
}

// typeShadow is the shadow of one IPC type.
type typeShadow struct {
	handles map[int]*object // every bound handle, live or removed
	order   []int           // handles in binding order (for deterministic choice)
	keys    map[int32]*object
	live    int
	limit   int64
	// liveHandles and staleHandles partition order, each in binding order.
	liveHandles, staleHandles []int
}

// Shadow is the generator's idea of the state a script has reached. It
// predicts successes and failures closely enough to steer the choices; it is
// never used as an oracle.
type Shadow struct {
	types      [len(ops.IPCTypes)]*typeShadow
	nextHandle int
	focus      ops.IPCType // most operations go to one type, so its ids wrap
	// churn makes most operations on the focus type create or remove, so
	// that the cyclic cursor passes the 64-slot window and ids wrap.
	churn bool
	// renamed leaves out what names ids literally (next_id requests), since a
	// comparison up to renaming cannot match them across implementations.
	renamed bool
}

// NewShadow returns the shadow of a fresh namespace, for scripts compared
// under rel.
func NewShadow(rel equiv.Relation) *Shadow {
	s := &Shadow{renamed: rel == equiv.IDsRenamed}
	for _, t := range ops.IPCTypes {
		s.types[t] = &typeShadow{handles: map[int]*object{}, keys: map[int32]*object{}, limit: ops.DefaultLimit(t)}
	}
	return s
}

// Keys drawn for keyed gets: a small pool so that keys collide often.
var keyPool = []int32{0x1, 0x2, 0x3, 0x10, 0x7fffffff, -1}

var modePool = []uint16{0600, 0600, 0644, 0666, 0400, 0000, 0777, 0640}

// Callers other than root: the owner of some objects, or a stranger.
var userPool = []uint32{1000, 1001}

// Sizes: shm bytes (kept small: a real kernel refuses what it cannot
// account), sem nsems (32001 is above semmsl).
var shmSizes = []int64{1, 4096, 4096, 8192, 65536, 0}
var semSizes = []int64{1, 1, 2, 4, 0, 32001}

// invalidIDs are literal ids no object can have in a script: negative, or a
// seq of 65535 that only the restore path (never drawn with it) can give.
var invalidIDs = []int64{-1, math.MinInt32, ops.MakeID(65535, 0), ops.MakeID(65535, 7), math.MaxInt32}

func pick[T any](src Source, pool []T, label string) T {
	return pool[src.Intn(len(pool), label)]
}

type action uint8

const (
	actCreatePrivate action = iota
	actGetKey
	actRmidLive
	actRmidStale
	actStatLive
	actStatStale
	actInvalidID
	actNextID
	actLimit
	actList
	actChurn
)

// Step draws one operation valid for (or deliberately invalid in) the current
// state and advances the shadow by the operation's expected effect.
func (s *Shadow) Step(src Source) ops.Op {
	t := s.focus
	if src.Intn(4, "other type") == 0 {
		t = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "type")]
	}
	ts := s.types[t]
	// The menu lists what makes sense now, with repeats as weights.
	menu := []action{actCreatePrivate, actCreatePrivate, actGetKey, actGetKey, actGetKey, actList, actInvalidID, actLimit, actChurn, actChurn}
	if !s.renamed {
		menu = append(menu, actNextID)
	}
	live, stale := ts.liveHandles, ts.staleHandles
	if len(live) > 0 {
		menu = append(menu, actRmidLive, actRmidLive, actRmidLive, actRmidLive, actStatLive, actStatLive)
	}
	if s.churn && t == s.focus {
		menu = append(menu, actChurn, actChurn, actChurn, actChurn, actChurn, actChurn)
		if len(live) > 0 {
			menu = append(menu, actRmidLive, actRmidLive, actRmidLive, actRmidLive, actRmidLive, actRmidLive)
		}
	}
	if len(stale) > 0 {
		menu = append(menu, actRmidStale, actStatStale)
	}
	switch menu[src.Intn(len(menu), "action")] {
	case actCreatePrivate, actChurn:
		return s.get(src, t, ops.IPCPrivate)
	case actGetKey:
		return s.get(src, t, pick(src, keyPool, "key"))
	case actRmidLive:
		h := pick(src, live, "handle")
		op := ops.Op{Kind: ops.KindRmid, Type: t, Obj: ops.Ref{Handle: h}, As: s.caller(src)}
		s.rmid(t, h, op.As)
		return op
	case actRmidStale:
		return ops.Op{Kind: ops.KindRmid, Type: t, Obj: ops.Ref{Handle: pick(src, stale, "handle")}}
	case actStatLive:
		return ops.Op{Kind: ops.KindStat, Type: t, Obj: ops.Ref{Handle: pick(src, live, "handle")}, As: s.caller(src)}
	case actStatStale:
		return ops.Op{Kind: ops.KindStat, Type: t, Obj: ops.Ref{Handle: pick(src, stale, "handle")}}
	case actInvalidID:
		kind := pick(src, []ops.Kind{ops.KindRmid, ops.KindStat}, "kind")
		return ops.Op{Kind: kind, Type: t, Obj: ops.Ref{ID: pick(src, invalidIDs, "id")}}
	case actNextID:
		// A request near the slots in use, sometimes invalid (negative).
		v := ops.MakeID(src.Intn(4, "seq"), src.Intn(ts.live+70, "idx"))
		if src.Intn(8, "negative") == 0 {
			v = -1
		}
		return ops.Op{Kind: ops.KindNextID, Type: t, Value: v}
	case actLimit:
		choices := []int64{int64(ts.live), int64(ts.live) + 1, int64(max(ts.live-1, 0)), 0,
			ops.DefaultLimit(t), ops.IPCMNI, ops.IPCMNI + 1, -1}
		v := pick(src, choices, "limit")
		s.setLimit(t, v)
		return ops.Op{Kind: ops.KindLimit, Type: t, Value: v}
	}
	return ops.Op{Kind: ops.KindList, Type: t}
}

// caller is usually root, sometimes an unprivileged user.
func (s *Shadow) caller(src Source) uint32 {
	if src.Intn(5, "unprivileged") == 0 {
		return pick(src, userPool, "as")
	}
	return 0
}

// handlesBy lists the handles whose object is live (or removed), in binding order.
func (ts *typeShadow) handlesBy(live bool) []int {
	var hs []int
	for _, h := range ts.order {
		if ts.handles[h].live == live {
			hs = append(hs, h)
		}
	}
	return hs
}

// refresh recomputes the live and stale handle lists after a removal.
func (ts *typeShadow) refresh() {
	ts.liveHandles, ts.staleHandles = ts.handlesBy(true), ts.handlesBy(false)
}

// get draws a msgget/semget/shmget of key and predicts its outcome.
func (s *Shadow) get(src Source, t ops.IPCType, key int32) ops.Op {
	s.nextHandle++
	op := ops.Op{Kind: ops.KindGet, Type: t, Bind: s.nextHandle, Key: key, Mode: pick(src, modePool, "mode")}
	if key != ops.IPCPrivate {
		switch src.Intn(6, "flags") {
		case 0:
		case 1:
			op.Creat, op.Excl = true, true
		case 2:
			op.Excl = true
		default:
			op.Creat = true
		}
	}
	switch t {
	case ops.Shm:
		op.Size = pick(src, shmSizes, "size")
	case ops.Sem:
		op.Size = pick(src, semSizes, "nsems")
	}
	op.As = s.caller(src)
	ts := s.types[t]
	if o := ts.keys[key]; key != ops.IPCPrivate && o != nil && o.live {
		if !(op.Creat && op.Excl) {
			ts.bind(op.Bind, o) // the lookup may still fail on size or permission
		}
		return op
	}
	if key != ops.IPCPrivate && !op.Creat {
		return op
	}
	if (t == ops.Shm || t == ops.Sem) && (op.Size < 1 || op.Size > ops.DefaultSemmsl) {
		return op
	}
	if int64(ts.live) >= min(ts.limit, ops.IPCMNI) {
		return op
	}
	o := &object{key: key, mode: op.Mode, owner: op.As, size: op.Size, live: true}
	ts.bind(op.Bind, o)
	ts.live++
	if key != ops.IPCPrivate {
		ts.keys[key] = o
	}
	return op
}

func (ts *typeShadow) bind(h int, o *object) {
	ts.handles[h] = o
	ts.order = append(ts.order, h)
	ts.liveHandles = append(ts.liveHandles, h)
}

func (s *Shadow) rmid(t ops.IPCType, h int, as uint32) {
	ts := s.types[t]
	o := ts.handles[h]
	if as != 0 && as != o.owner {
		return // EPERM
	}
	o.live = false
	ts.live--
	if ts.keys[o.key] == o {
		delete(ts.keys, o.key)
	}
	ts.refresh()
}

func (s *Shadow) setLimit(t ops.IPCType, v int64) {
	if v > ops.IPCMNI || v < 0 {
		return
	}
	s.types[t].limit = v
}

// MaxLen is the longest script Draw makes.
const MaxLen = 500

// Draw draws a script: its length (short, medium or long enough for the
// cyclic allocator to wrap), the type most of it works on, then the steps.
func Draw(src Source, rel equiv.Relation) []ops.Op {
	var n int
	switch src.Intn(4, "length class") {
	case 0, 1:
		n = 1 + src.Intn(30, "length")
	case 2:
		n = 30 + src.Intn(120, "length")
	default:
		n = 150 + src.Intn(MaxLen-150+1, "length")
	}
	focus := ops.IPCTypes[src.Intn(len(ops.IPCTypes), "focus")]
	return Script(src, rel, focus, src.Intn(3, "churn") == 0, n)
}

// Script draws n operations, most of them on focus, from a fresh shadow;
// with churn, most of those create or remove.
func Script(src Source, rel equiv.Relation, focus ops.IPCType, churn bool, n int) []ops.Op {
	s := NewShadow(rel)
	s.focus, s.churn = focus, churn
	out := make([]ops.Op, n)
	for i := range out {
		out[i] = s.Step(src)
	}
	return out
}

// Pick draws one element of pool; other subsystems' generators use it.
func Pick[T any](src Source, pool []T, label string) T { return pick(src, pool, label) }
