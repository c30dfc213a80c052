// Package ids is the ids subsystem (the SysV IPC id allocator and the
// /proc/sysvipc listings) as the drivers see it: its generator and its
// registry value, Subsystem.
//
// One generator serves every engine. It draws from an engine.Source (rapid's
// *T, gopter's random generator, or go test -fuzz bytes), keeps a shadow of
// what the script should have done so far, and chooses explicitly among the
// named actions that make sense in that state (never by skipping, see
// rapid#57): existing ids, stale ids, keys in use, near-limit states,
// deliberately invalid arguments, fills that make a table large in one
// operation, and churns that move the allocator far (its cursor round the
// window, seq to its wrap). Each script weighs the actions its own way
// (swarm testing), so some grow to hundreds of live objects.
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
	live    int // live objects, with those of fills (which have no handle)
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
	cur        ops.IPCType // the type of the step being drawn
	swarm      engine.Swarm
	plan       engine.Plan
	// renamed leaves out what names ids literally (next_id requests) or
	// makes objects without handles (fill), since a comparison up to
	// renaming cannot match them across implementations.
	renamed bool
}

// NewShadow returns the shadow of a fresh namespace, for scripts compared
// under rel, with the type most of the script works on and its swarm
// weights drawn from src. About one script in 32 begins with the seq wrap
// scenario (wrap.go).
func NewShadow(src Source, rel equiv.Relation) *Shadow { return newShadowWrapping(src, rel, true) }

// newShadowWrapping is NewShadow, without the seq wrap scenario unless wraps.
func newShadowWrapping(src Source, rel equiv.Relation, wraps bool) *Shadow {
	s := newShadow(rel)
	s.focus = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "focus")]
	s.swarm = actions.Swarm(src)
	if engine.OneIn(src, WrapOneIn, "seq wrap") && wraps {
		s.beginWrap(src)
	}
	return s
}

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

// Step draws one operation valid for (or deliberately invalid in) the current
// state and advances the shadow by the operation's expected effect: the
// next one a scenario planned, or one of the actions that make sense for
// the step's type (the script's focus, one step in four another).
func (s *Shadow) Step(src Source) ops.Op {
	if op, ok := s.plan.Next(); ok {
		return op
	}
	s.cur = s.focus
	if src.Intn(4, "other type") == 0 {
		s.cur = ops.IPCTypes[src.Intn(len(ops.IPCTypes), "type")]
	}
	op, _ := actions.Step(src, s.swarm, s) // list always makes sense
	return op
}

// ts is the shadow of the step's type.
func (s *Shadow) ts() *typeShadow { return s.types[s.cur] }

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

// room reports whether the limit lets one more object of the type in.
func (ts *typeShadow) room() bool { return int64(ts.live) < min(ts.limit, ops.IPCMNI) }

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
	if !ts.room() {
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

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { return s.clone() }

// clone copies the shadow so that gopter's states are never shared.
func (s *Shadow) clone() *Shadow {
	c := *s
	c.plan = s.plan.Copy()
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
	Doc:        "the SysV IPC id allocator (get, rmid, stat, next_id, limits, churn, fill) and /proc/sysvipc listings",
	NewShadow:  func(src engine.Source, rel equiv.Relation) engine.Shadow { return NewShadow(src, rel) },
	MinLen:     1,
	MaxLen:     MaxLen,
	FuzzMaxLen: 64,
	Relations:  []equiv.Relation{equiv.Exact, equiv.IDsRenamed},
}
