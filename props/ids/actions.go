package ids

import (
	"math"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// actions is the generator's table: each step draws one of those whose
// When holds for the step's type, by weight (times the script's swarm).
var actions = engine.Actions[*Shadow]{
	{Name: "create", Weight: 3, Draw: func(s *Shadow, src Source) ops.Op { return s.get(src, s.cur, ops.IPCPrivate) }},
	{Name: "get key", Weight: 3, Draw: func(s *Shadow, src Source) ops.Op { return s.get(src, s.cur, pick(src, keyPool, "key")) }},
	{Name: "list", Weight: 1, Draw: func(s *Shadow, _ Source) ops.Op { return ops.Op{Kind: ops.KindList, Type: s.cur} }},
	{Name: "invalid id", Weight: 1, Draw: (*Shadow).invalidID},
	{Name: "limit", Weight: 1, Draw: (*Shadow).limit},
	{Name: "churn", Weight: 1, Draw: (*Shadow).churn},
	{Name: "next_id", Weight: 1, When: exact, Draw: (*Shadow).nextID},
	{Name: "read next_id", Weight: 1, When: exact, Draw: func(s *Shadow, _ Source) ops.Op { return ops.Op{Kind: ops.KindReadNextID, Type: s.cur} }},
	{Name: "rmid", Weight: 3, When: hasLive, Draw: (*Shadow).rmidLive},
	{Name: "stat", Weight: 2, When: hasLive, Draw: (*Shadow).statLive},
	{Name: "rmid stale", Weight: 1, When: hasStale, Draw: func(s *Shadow, src Source) ops.Op {
		return ops.Op{Kind: ops.KindRmid, Type: s.cur, Obj: ops.Ref{Handle: pick(src, s.ts().staleHandles, "handle")}}
	}},
	{Name: "stat stale", Weight: 1, When: hasStale, Draw: func(s *Shadow, src Source) ops.Op {
		return ops.Op{Kind: ops.KindStat, Type: s.cur, Obj: ops.Ref{Handle: pick(src, s.ts().staleHandles, "handle")}}
	}},
	{Name: "fill", Weight: 1, When: exact, Draw: (*Shadow).fill},
	{Name: "rmid newest", Weight: 1, When: func(s *Shadow) bool { return len(s.ts().liveHandles) >= 2 }, Draw: (*Shadow).rmidNewest},
}

func exact(s *Shadow) bool    { return !s.renamed }
func hasLive(s *Shadow) bool  { return len(s.ts().liveHandles) > 0 }
func hasStale(s *Shadow) bool { return len(s.ts().staleHandles) > 0 }

func (s *Shadow) rmidLive(src Source) ops.Op {
	return s.rmidOf(pick(src, s.ts().liveHandles, "handle"), s.caller(src))
}

// rmidNewest removes the newest live object by root, while others live:
// with the cyclic allocator it is mostly the one at max_idx, whose removal
// lowers max_idx to the next object down.
func (s *Shadow) rmidNewest(Source) ops.Op {
	live := s.ts().liveHandles
	return s.rmidOf(live[len(live)-1], 0)
}

func (s *Shadow) rmidOf(h int, as uint32) ops.Op {
	op := ops.Op{Kind: ops.KindRmid, Type: s.cur, Obj: ops.Ref{Handle: h}, As: as}
	s.rmid(s.cur, h, as)
	return op
}

func (s *Shadow) statLive(src Source) ops.Op {
	return ops.Op{Kind: ops.KindStat, Type: s.cur, Obj: ops.Ref{Handle: pick(src, s.ts().liveHandles, "handle")}, As: s.caller(src)}
}

func (s *Shadow) invalidID(src Source) ops.Op {
	kind := pick(src, []ops.Kind{ops.KindRmid, ops.KindStat}, "kind")
	return ops.Op{Kind: kind, Type: s.cur, Obj: ops.Ref{ID: pick(src, invalidIDs, "id")}}
}

// nextID draws a request near the slots in use, sometimes invalid (negative).
func (s *Shadow) nextID(src Source) ops.Op {
	v := ops.MakeID(src.Intn(4, "seq"), src.Intn(s.ts().live+70, "idx"))
	if src.Intn(8, "negative") == 0 {
		v = -1
	}
	return ops.Op{Kind: ops.KindNextID, Type: s.cur, Value: v}
}

func (s *Shadow) limit(src Source) ops.Op {
	live := int64(s.ts().live)
	choices := []int64{live, live + 1, max(live-1, 0), 0,
		ops.DefaultLimit(s.cur), ops.IPCMNI, ops.IPCMNI + 1, -1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32}
	v := pick(src, choices, "limit")
	s.setLimit(s.cur, v)
	return ops.Op{Kind: ops.KindLimit, Type: s.cur, Value: v}
}

// churn draws a short create/remove loop, enough to move the cursor round
// the window a few times.
func (s *Shadow) churn(src Source) ops.Op {
	return ops.Op{Kind: ops.KindChurn, Type: s.cur, Value: int64(1 + src.Intn(3*ops.MinCycle, "churn"))}
}

// fillPool: a few objects, past the 64 that make the cyclic window grow, up
// to a few hundred.
var fillPool = []int64{1, 2, 20, 43, 63, 64, 65, 100, 200}

// fill draws a fill of the step's type: a size from fillPool or, one time
// in two when the limit is near, exactly what the limit lets in, or one
// more (the last one ENOSPC).
func (s *Shadow) fill(src Source) ops.Op {
	ts := s.ts()
	n := pick(src, fillPool, "fill")
	room := min(ts.limit, ops.IPCMNI) - int64(ts.live)
	if room <= 300 && src.Intn(2, "to the limit") == 0 {
		n = max(room+int64(src.Intn(2, "one past")), 1)
	}
	op := ops.Op{Kind: ops.KindFill, Type: s.cur, Value: n, As: s.caller(src)}
	ts.live += int(min(n, max(room, 0)))
	return op
}
