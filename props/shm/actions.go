package shm

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// actions is the generator's table: each step draws one of those whose
// When holds, by weight (times the script's swarm).
var actions = engine.Actions[*Shadow]{
	{Name: "create", Weight: 2, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.get(src, ops.IPCPrivate) }},
	{Name: "get key", Weight: 2, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.get(src, engine.Pick(src, keyPool, "key")) }},
	{Name: "info", Weight: 1, Draw: (*Shadow).info},
	{Name: "stat index", Weight: 1, Draw: (*Shadow).statIdx},
	{Name: "exit", Weight: 1, Draw: (*Shadow).exitTask},
	{Name: "rmid forced", Weight: 1, Draw: (*Shadow).forcedOp},
	{Name: "list", Weight: 1, Draw: func(_ *Shadow, src engine.Source) ops.Op {
		return ops.Op{Kind: ops.KindList, Type: ops.Shm, Rows: src.Intn(4, "plain") != 0}
	}},
	{Name: "other type", Weight: 1, Draw: (*Shadow).otherType},
	{Name: "size at shmmax", Weight: 1, Draw: (*Shadow).atShmmax},
	{Name: "attach", Weight: 4, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.attach(src, s.pick(src, true)) }},
	{Name: "rmid", Weight: 2, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.rmid(src, s.pick(src, true)) }},
	{Name: "stat", Weight: 1, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.ctl(src, s.pick(src, true), ops.ShmIPCStat) }},
	{Name: "set", Weight: 1, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.set(src, s.pick(src, true)) }},
	{Name: "lock", Weight: 2, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op {
		return s.ctl(src, s.pick(src, true), engine.Pick(src, []ops.ShmCmd{ops.ShmLock, ops.ShmLock, ops.ShmUnlock}, "cmd"))
	}},
	{Name: "bad buffer", Weight: 1, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op {
		op := s.ctl(src, s.pick(src, true), engine.Pick(src, []ops.ShmCmd{ops.ShmIPCStat, ops.ShmStat, ops.ShmIPCInfo, ops.ShmInfoCmd, ops.ShmIPCSet}, "cmd"))
		op.BadBuf = true
		return op
	}},
	{Name: "invalid command", Weight: 1, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.ctl(src, s.pick(src, true), ops.ShmInvalid) }},
	{Name: "attach stale", Weight: 1, When: hasStale, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.attach(src, s.pick(src, false)) }},
	{Name: "stat stale", Weight: 1, When: hasStale, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.ctl(src, s.pick(src, false), ops.ShmIPCStat) }},
	{Name: "detach", Weight: 3, When: hasLiveAtt, Draw: func(s *Shadow, src engine.Source) ops.Op {
		a := engine.Pick(src, s.attHandles(true), "attachment")
		return s.detach(a, s.atts[a].task)
	}},
	{Name: "detach by another task", Weight: 1, When: hasLiveAtt, Draw: func(s *Shadow, src engine.Source) ops.Op {
		a := engine.Pick(src, s.attHandles(true), "attachment")
		return s.detach(a, src.Intn(s.Span+1, "task"))
	}},
	{Name: "exit attached", Weight: 1, When: hasLiveAtt, Draw: (*Shadow).exitTask},
	{Name: "attach at", Weight: 3, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.attachAt(src, s.pick(src, true)) }},
	{Name: "attach at a bad address", Weight: 1, When: hasLive, Draw: func(s *Shadow, src engine.Source) ops.Op { return s.attachBad(src, s.pick(src, true)) }},
	{Name: "detach at", Weight: 2, Draw: (*Shadow).detachAt},
	{Name: "read or write", Weight: 3, Draw: (*Shadow).access},
	{Name: "hugetlb", Weight: 1, Draw: (*Shadow).hugetlb},
	{Name: "fork", Weight: 1, Draw: (*Shadow).forkTask},
	{Name: "fork attached", Weight: 1, When: hasLiveAtt, Draw: (*Shadow).forkTask},
	{Name: "visit a namespace", Weight: 1, When: func(s *Shadow) bool { return len(s.homeTasks()) > 0 }, Draw: (*Shadow).visit},
	{Name: "detach stale", Weight: 1, When: func(s *Shadow) bool { return len(s.attHandles(false)) > 0 }, Draw: func(s *Shadow, src engine.Source) ops.Op {
		a := engine.Pick(src, s.attHandles(false), "attachment")
		return s.detach(a, s.atts[a].task)
	}},
}

func hasLive(s *Shadow) bool    { return len(s.handles(true)) > 0 }
func hasStale(s *Shadow) bool   { return len(s.handles(false)) > 0 }
func hasLiveAtt(s *Shadow) bool { return len(s.attHandles(true)) > 0 }

// pick draws the handle of a live (or removed) segment.
func (s *Shadow) pick(src engine.Source, live bool) int {
	return engine.Pick(src, s.handles(live), "handle")
}

// info is IPC_INFO or SHM_INFO, on an id that does not matter.
func (s *Shadow) info(src engine.Source) ops.Op {
	op := ops.Op{Kind: ops.KindShmctl, Type: ops.Shm, Obj: ops.Ref{ID: int64(src.Intn(3, "id"))}, Cmd: engine.Pick(src, []ops.ShmCmd{ops.ShmIPCInfo, ops.ShmInfoCmd}, "cmd"), Task: s.task(src)}
	if src.Intn(10, "negative") == 0 {
		op.Obj.ID = -1
	}
	return op
}

// statIdx is SHM_STAT or SHM_STAT_ANY on an index, possibly with a stale or
// foreign seq (only idx counts); up to renaming, which cannot relate
// indexes, a listing instead.
func (s *Shadow) statIdx(src engine.Source) ops.Op {
	if s.renamed {
		return ops.Op{Kind: ops.KindList, Type: ops.Shm, Rows: true}
	}
	id := int64(src.Intn(6, "idx")) + ops.MakeID(src.Intn(3, "seq"), 0)
	return ops.Op{Kind: ops.KindShmctl, Type: ops.Shm, Obj: ops.Ref{ID: id}, Cmd: engine.Pick(src, []ops.ShmCmd{ops.ShmStat, ops.ShmStatAny}, "cmd"), As: s.caller(src), Task: s.task(src)}
}

func (s *Shadow) exitTask(src engine.Source) ops.Op {
	n := 1 + src.Intn(s.Span, "task")
	s.exit(n)
	return ops.Op{Kind: ops.KindExit, Task: uint8(n)}
}

func (s *Shadow) forcedOp(src engine.Source) ops.Op {
	v := engine.Pick(src, []int64{0, 1, 1, 2}, "value")
	s.setForced(v)
	return ops.Op{Kind: ops.KindRmidForced, Type: ops.Shm, Value: v}
}

// otherType lists or creates a queue or an array: shm scripts see the
// other types' ids too.
func (s *Shadow) otherType(src engine.Source) ops.Op {
	t := engine.Pick(src, []ops.IPCType{ops.Msg, ops.Sem}, "type")
	if src.Intn(2, "list") == 0 {
		return ops.Op{Kind: ops.KindList, Type: t, Rows: true}
	}
	s.NextHandle++
	op := ops.Op{Kind: ops.KindGet, Type: t, Bind: s.NextHandle, Mode: engine.Pick(src, modePool, "mode")}
	if t == ops.Sem {
		op.Size = 1 + int64(src.Intn(3, "nsems"))
	}
	return op
}
