// Package ids is the ids subsystem (the SysV IPC id allocator and the
// /proc/sysvipc listings) as the drivers see it: its generator and its
// registry value, Subsystem.
//
// One generator serves every engine. It draws from an engine.Source (rapid's
// *T, gopter's random generator, or go test -fuzz bytes), keeps a shadow of
// what the script should have done so far, and chooses explicitly among the
// actions that make sense in that state (never by skipping, see rapid#57):
// existing ids, stale ids, keys in use, near-limit states, deliberately
// invalid arguments, and churns that move the allocator far (its cursor
// round the window, seq to its wrap). Each script weighs the actions its
// own way (swarm testing), so some grow to hundreds of live objects.
package ids

import (
	"maps"
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Source is where the generator's choices come from.
type Source = engine.Source

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
	swarm      engine.Swarm
	// pending are operations drawn ahead, which Step hands out first.
	pending []ops.Op
	// renamed leaves out what names ids literally (next_id requests), since a
	// comparison up to renaming cannot match them across implementations.
	renamed bool
}

// NewShadow returns the shadow of a fresh namespace, for scripts compared
// under rel, with the type most of the script works on and its swarm
// weights drawn from src.
//
// One script in WrapOneIn begins by creating a few objects of msg or sem and
// churning until that type's seq wraps (from 65534 to 0): the boundary no
// handful of operations reaches.
func NewShadow(src Source, rel equiv.Relation) *Shadow {
	s := newShadow(rel)
	s.focus = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "focus")]
	s.swarm = engine.NewSwarm(src, int(numActions))
	// A value away from the ends: rapid, which favours small and extreme
	// values, then draws it no more often than the others draw it.
	if src.Intn(WrapOneIn, "seq wrap") == WrapOneIn*2/3 {
		s.focus = pick(src, []ops.IPCType{ops.Msg, ops.Sem}, "wrap type")
		for range src.Intn(80, "live before the wrap") {
			s.pending = append(s.pending, s.get(src, s.focus, ops.IPCPrivate))
		}
		s.pending = append(s.pending, s.wrap(src, s.focus))
	}
	return s
}

// WrapOneIn is how rare a script that wraps seq is: such a script makes
// about four million objects, about three seconds on the live kernel.
const WrapOneIn = 500

func newShadow(rel equiv.Relation) *Shadow {
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

func pick[T any](src Source, pool []T, label string) T { return engine.Pick(src, pool, label) }

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
	numActions
)

// Step draws one operation valid for (or deliberately invalid in) the current
// state and advances the shadow by the operation's expected effect.
func (s *Shadow) Step(src Source) ops.Op {
	if len(s.pending) > 0 {
		op := s.pending[0]
		s.pending = s.pending[1:]
		return op
	}
	t := s.focus
	if src.Intn(4, "other type") == 0 {
		t = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "type")]
	}
	ts := s.types[t]
	// The menu lists what makes sense now, with repeats as weights; the
	// script's swarm weights scale them.
	menu := []action{actCreatePrivate, actCreatePrivate, actCreatePrivate, actGetKey, actGetKey, actGetKey, actList, actInvalidID, actLimit, actChurn}
	if !s.renamed {
		menu = append(menu, actNextID)
	}
	live, stale := ts.liveHandles, ts.staleHandles
	if len(live) > 0 {
		menu = append(menu, actRmidLive, actRmidLive, actRmidLive, actStatLive, actStatLive)
	}
	if len(stale) > 0 {
		menu = append(menu, actRmidStale, actStatStale)
	}
	switch engine.Choose(src, s.swarm, menu) {
	case actChurn:
		return s.churn(src, t)
	case actCreatePrivate:
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
			ops.DefaultLimit(t), ops.IPCMNI, ops.IPCMNI + 1, -1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32}
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

// churn draws a short create/remove loop, enough to move the cursor round
// the window a few times.
func (s *Shadow) churn(src Source, t ops.IPCType) ops.Op {
	return ops.Op{Kind: ops.KindChurn, Type: t, Value: int64(1 + src.Intn(3*ops.MinCycle, "churn"))}
}

// wrap draws a churn that takes type t's seq past its wrap: 65534 passes of
// the cursor, each of max(in_use*3/2, 64) - in_use allocations, give seq
// 65534; the next pass wraps it to 0. It ends a little before, at, or a
// little after the wrap.
func (s *Shadow) wrap(src Source, t ops.IPCType) ops.Op {
	live := int64(s.types[t].live)
	perWrap := max(live*3/2, ops.MinCycle) - live
	n := perWrap*int64(ops.SeqMax-1) + int64(src.Intn(int(3*perWrap), "past the wrap")) - perWrap
	return ops.Op{Kind: ops.KindChurn, Type: t, Value: min(max(n, 1), ops.MaxChurn)}
}

// MaxLen is the longest script Draw makes.
const MaxLen = 500

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { return s.clone() }

// clone copies the shadow so that gopter's states are never shared.
func (s *Shadow) clone() *Shadow {
	c := *s
	c.pending = append([]ops.Op(nil), s.pending...)
	for i, ts := range s.types {
		objs := map[*object]*object{}
		cp := func(o *object) *object {
			if o == nil {
				return nil
			}
			if n, ok := objs[o]; ok {
				return n
			}
			n := *o
			objs[o] = &n
			return &n
		}
		nt := &typeShadow{handles: map[int]*object{}, keys: map[int32]*object{}, order: append([]int(nil), ts.order...), live: ts.live, limit: ts.limit}
		for h, o := range ts.handles {
			nt.handles[h] = cp(o)
		}
		for k, o := range maps.All(ts.keys) {
			nt.keys[k] = cp(o)
		}
		nt.refresh()
		c.types[i] = nt
	}
	return &c
}

// Subsystem is the ids subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "ids",
	Doc:        "the SysV IPC id allocator (get, rmid, stat, next_id, limits, churn) and /proc/sysvipc listings",
	NewShadow:  func(src engine.Source, rel equiv.Relation) engine.Shadow { return NewShadow(src, rel) },
	MinLen:     1,
	MaxLen:     MaxLen,
	FuzzMaxLen: 64,
	Relations:  []equiv.Relation{equiv.Exact, equiv.IDsRenamed},
}
