package ids

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// WrapOneIn: one script in 2^WrapOneIn (32) begins with the seq wrap
// scenario, the boundary no handful of operations reaches. Such a script
// makes about 1.4 million objects: a tenth of a second on the models, one
// and a half to three on the live kernel.
const WrapOneIn = 5

// wrapLive are the objects a wrap scenario keeps live: 43 make the fewest
// allocations a pass of the cursor (the window of 64 has 21 free slots), so
// the cheapest wrap; the others are close to it.
var wrapLive = []int{43, 43, 42, 44, 40}

// perPass is how many allocations one pass of the cyclic cursor makes
// with live objects at idx 0..live-1: the free slots of the window
// min(max(live*3/2, 64), IPCMNI). Each pass after the first bumps seq.
func perPass(live int) int64 {
	return int64(min(max(live*3/2, ops.MinCycle), ops.IPCMNI) - live)
}

// beginWrap plans the seq wrap scenario on msg (or sem, one time in
// eight: a sem churn costs three times a msg one on the kernel): a fill of
// about 43 objects, a churn that brings seq to its wrap (from 65534 to 0),
// and a get that shows where it stands. The get is the first allocation
// with seq 65534 (one time in five), the first with seq 0 after the wrap
// (two in five), the one after it, or the first of the next pass: an
// allocator that wraps one value early is seen at each, one that wraps a
// value late at all but the first.
//
// Compared up to renaming, where fills are left out, the objects are made
// by gets and the churn ends a little before, at, or a little after the
// wrap of the cyclic allocator (beginChurnWrap).
func (s *Shadow) beginWrap(src Source) {
	if s.renamed && !engine.OneIn(src, 6, "seq wrap up to renaming") {
		return // 64 times rarer: see beginChurnWrap
	}
	t := pick(src, []ops.IPCType{ops.Msg, ops.Msg, ops.Msg, ops.Msg, ops.Msg, ops.Msg, ops.Msg, ops.Sem}, "wrap type")
	s.focus = t
	if s.renamed {
		s.beginChurnWrap(src, t)
		return
	}
	live := pick(src, wrapLive, "live before the wrap")
	s.plan.Add(ops.Op{Kind: ops.KindFill, Type: t, Value: int64(live)})
	s.types[t].live += live
	per := perPass(live)
	first := per*(ops.SeqMax-1) + 1 // the churn's allocation that first has seq 65534
	again := per*ops.SeqMax + 1     // the first with seq 0 again
	at := pick(src, []int64{first, again, again, again + 1, again + per}, "where the wrap ends")
	s.plan.Add(ops.Op{Kind: ops.KindChurn, Type: t, Value: at - 1}, s.plainGet(t))
}

// plainGet is a get of a new IPC_PRIVATE object of type t that succeeds
// (mode 0600, one semaphore or one byte), bound to a new handle.
func (s *Shadow) plainGet(t ops.IPCType) ops.Op {
	s.nextHandle++
	op := ops.Op{Kind: ops.KindGet, Type: t, Bind: s.nextHandle, Mode: 0o600}
	if t != ops.Msg {
		op.Size = 1
	}
	ts := s.types[t]
	ts.bind(op.Bind, &object{mode: op.Mode, size: op.Size, live: true})
	ts.live++
	return op
}

// beginChurnWrap is the wrap scenario without a fill: up to 79 gets, then
// a churn that ends a little before, at, or a little after the wrap. Its
// churn makes up to 4.2 million objects, and it compares the legacy
// allocator (which scans from idx 0 at every allocation) with the cyclic
// one up to renaming, where the wrap of one is no edge of the other: it is
// drawn 64 times less often than the wrap scenario (one script in 2048,
// about as often as before the fill).
func (s *Shadow) beginChurnWrap(src Source, t ops.IPCType) {
	for range src.Intn(80, "live before the wrap") {
		s.plan.Add(s.get(src, t, ops.IPCPrivate))
	}
	per := perPass(s.types[t].live)
	n := per*(ops.SeqMax-1) + int64(src.Intn(int(3*per), "past the wrap")) - per
	s.plan.Add(ops.Op{Kind: ops.KindChurn, Type: t, Value: min(max(n, 1), ops.MaxChurn)})
}
