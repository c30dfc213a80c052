package props_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/props/msg"
	"github.com/ipcfuzz/ipcfuzz/props/sem"
	"github.com/ipcfuzz/ipcfuzz/props/shm"
	"github.com/ipcfuzz/ipcfuzz/props/vma"
)

var reachTable = flag.Int("reach.table", 0, "print how many of this many scripts per engine reach each edge (TestGeneratorsReachTheEdges)")

// engineOf is one way scripts are drawn: rapid's and gopter's generators as
// compare draws them, or fuzz bytes from random inputs (64 to 1024 bytes)
// as go test -fuzz decodes them.
type engineOf struct {
	name    string
	scripts func(engine.Subsystem) func(seed uint64) []ops.Op
}

var engines = []engineOf{
	{"rapid", func(s engine.Subsystem) func(uint64) []ops.Op { return s.RapidScripts(equiv.Exact) }},
	{"gopter", func(s engine.Subsystem) func(uint64) []ops.Op { return s.GopterScripts(equiv.Exact) }},
	{"fuzz bytes", func(s engine.Subsystem) func(uint64) []ops.Op {
		return func(seed uint64) []ops.Op {
			r := rand.New(rand.NewPCG(seed, 0xf022))
			data := make([]byte, 64+r.IntN(961))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			return s.DrawFuzz(&engine.ByteSource{Data: data})
		}
	}},
}

// edges are the states of a subsystem its generator must reach; reached
// says which of them one script reaches (by name).
type edges struct {
	sub     engine.Subsystem
	names   []string
	reached func(t testing.TB, script []ops.Op) map[string]bool
	// scripts per engine in the test: enough that each edge is expected
	// ten times or more.
	scripts int
}

var allEdges = []edges{
	{ids.Subsystem, []string{"seq at 65534", "seq wrapped", "max_idx lowered", "more than 64 live"}, idsReached, 450},
	{sem.Subsystem, []string{"exit clamped at SEMVMX", "exit clamped at 0", "complex ahead of simple", "restart after complex"}, semReached, 100},
	{msg.Subsystem, []string{"queue at msgmnb"}, msgReached, 100},
	{shm.Subsystem, []string{"segment at shmmax"}, shmReached, 100},
	// Calls the kernel refuses before it looks at anything (LTP's
	// invalid-command and nsops-0 cases): drawn now and then.
	{msg.Subsystem, []string{"msgctl invalid"}, drawn, 200},
	{shm.Subsystem, []string{"shmctl invalid"}, drawn, 200},
	{sem.Subsystem, []string{"semctl invalid", "semop nsops 0", "semop bad sops", "semtimedop bad timeout", "semctl bad buffer"}, drawn, 200},
	{msg.Subsystem, []string{"msgsnd bad buffer", "msgctl bad buffer", "receiver asleep with a bad buffer"}, drawn, 400},
	{shm.Subsystem, []string{"shmctl bad buffer"}, drawn, 200},
	{shm.Subsystem, []string{"shmat at a window page", "shmat rnd", "shmat remap", "shmat address 1 rnd remap", "shmdt at an address", "shm read", "shm write", "shmget hugetlb"}, drawn, 200},
	// Most scripts name few tasks; some name any of t1..t15, and put more
	// than engine.FewTasks of them to sleep at once.
	{msg.Subsystem, []string{"a task above t4", "more than 4 asleep"}, manyTasks, 1000},
	{sem.Subsystem, []string{"a task above t4", "more than 4 asleep"}, manyTasks, 1000},
	{shm.Subsystem, []string{"a task above t4"}, manyTasks, 200},
	// mseal and what it refuses afterwards (issue 21 item 7).
	{vma.Subsystem, []string{"seal", "empty seal", "change after a seal", "brk by bytes", "remap maymove"}, vmaDrawn, 200},
	// RLIMIT_MEMLOCK without CAP_IPC_LOCK (issue 33: do_mlock's and
	// mlock_future_ok's refusals), as the optimized model answers.
	{vma.Subsystem, []string{"memlock", "lock EPERM", "lock ENOMEM under a limit", "map locked EAGAIN", "remap EAGAIN"}, memlockReached, 800},
	// The THP area (issue 33: the page-table walkers' paths for a
	// PMD-mapped huge page): a whole aligned half mapped and written, and
	// moved or changed in part.
	{vma.Subsystem, []string{"THP area", "huge range written", "huge range moved aligned", "huge range split"}, thpReached, 400},
	// MREMAP_DONTUNMAP, MADV_REMOVE and MADV_POPULATE_* (issue 33:
	// move_vma's kept source, split_vma of a locked one, madvise_remove,
	// madvise_populate), and page advices over a whole PMD.
	{vma.Subsystem, []string{"dontunmap fixed", "dontunmap maymove", "dontunmap of locked pages", "remove", "populate_read", "populate_write", "page advice on a whole half"}, newCallsReached, 400},
}

// newCallsReached names the calls ipcfuzz learnt to speak for issue 33 that
// a script makes: MREMAP_DONTUNMAP (fixed, where the kernel picks, and of
// pages a lock reached), MADV_REMOVE, MADV_POPULATE_READ and _WRITE, and a
// cold, pageout or free advice over a whole aligned half of the THP area.
func newCallsReached(_ testing.TB, script []ops.Op) map[string]bool {
	out := map[string]bool{}
	type rng struct {
		r          ops.VMARegion
		start, end int64
	}
	var locked []rng
	for _, op := range script {
		a := op.VMA
		switch op.Kind {
		case ops.KindLock:
			locked = append(locked, rng{a.Region(), a.Start, a.Start + a.Pages})
		case ops.KindRemap:
			if !a.DontUnmap {
				continue
			}
			if a.Fixed {
				out["dontunmap fixed"] = true
			}
			if a.MayMove {
				out["dontunmap maymove"] = true
			}
			for _, l := range locked {
				if l.r == a.Region() && l.start < a.Start+a.Pages && a.Start < l.end {
					out["dontunmap of locked pages"] = true
				}
			}
		case ops.KindAdvise:
			switch a.Advice {
			case ops.AdviceRemove, ops.AdvicePopulateRead, ops.AdvicePopulateWrite:
				out[a.Advice.String()] = true
			case ops.AdviceCold, ops.AdvicePageOut, ops.AdviceFree:
				if a.THP && a.Start%(ops.VMATHPPages/2) == 0 && a.Pages == ops.VMATHPPages/2 {
					out["page advice on a whole half"] = true
				}
			}
		}
	}
	return out
}

// thpReached names what a script does in the THP area: a write to a
// mapping made over a whole 2 MiB-aligned half of it (where THP is enabled,
// a PMD-mapped huge page), a move of such a half to the other (the PMD
// moves whole), and a change of part of one (the PMD is split).
func thpReached(_ testing.TB, script []ops.Op) map[string]bool {
	const half = ops.VMATHPPages / 2
	out := map[string]bool{}
	var whole [2]bool // a map covered half i since it was last unmapped
	for _, op := range script {
		a := op.VMA
		if !a.THP {
			continue
		}
		out["THP area"] = true
		for i := range whole {
			lo := int64(i) * half
			covers := a.Start <= lo && a.Start+a.Pages >= lo+half
			meets := a.Start < lo+half && a.Start+a.Pages > lo
			switch {
			case op.Kind == ops.KindMap && covers:
				whole[i] = true
			case op.Kind == ops.KindUnmap && meets, op.Kind == ops.KindMap && meets:
				whole[i] = false
			case op.Kind == ops.KindTouch && a.Write && whole[i] && meets:
				out["huge range written"] = true
			case op.Kind == ops.KindRemap && a.Fixed && whole[i] && a.Start == lo && a.Pages >= half && a.Target%half == 0:
				out["huge range moved aligned"] = true
			case (op.Kind == ops.KindProtect || op.Kind == ops.KindAdvise || op.Kind == ops.KindLock) && whole[i] && meets && !covers:
				out["huge range split"] = true
			}
		}
	}
	return out
}

// memlockReached names the refusals of a limit of locked memory a script
// meets on the optimized model.
func memlockReached(t testing.TB, script []ops.Op) map[string]bool {
	out := map[string]bool{}
	if !slices.ContainsFunc(script, func(op ops.Op) bool { return op.Kind == ops.KindMemlock }) {
		return out
	}
	b, err := impls.Lookup("optimized")
	require.NoError(t, err)
	m, _, err := b.Start()
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Reset(ops.Config{}))
	limited := false
	for _, op := range script {
		r, err := m.Apply(op)
		require.NoError(t, err)
		switch {
		case op.Kind == ops.KindMemlock:
			out["memlock"], limited = true, true
		case !limited:
		case op.Kind == ops.KindLock && r.Err == ops.EPERM:
			out["lock EPERM"] = true
		case op.Kind == ops.KindLock && r.Err == ops.ENOMEM:
			out["lock ENOMEM under a limit"] = true
		case op.Kind == ops.KindMap && r.Err == ops.EAGAIN:
			out["map locked EAGAIN"] = true
		case op.Kind == ops.KindRemap && r.Err == ops.EAGAIN:
			out["remap EAGAIN"] = true
		}
	}
	return out
}

// manyTasks says whether a script names a task above engine.FewTasks, and
// whether more than that many tasks sleep at once on the optimized model.
func manyTasks(t testing.TB, script []ops.Op) map[string]bool {
	out := map[string]bool{}
	for _, op := range script {
		if int(op.Task) > engine.FewTasks {
			out["a task above t4"] = true
		}
	}
	if !out["a task above t4"] {
		return out
	}
	m, err := optimized.New()
	require.NoError(t, err)
	l := ops.NewLocal(ops.Info{Name: "optimized"}, m)
	ctx := context.Background()
	require.NoError(t, l.Reset(ctx, ops.Config{}))
	var asleep [ops.NumTasks]bool
	for _, op := range script {
		rs, err := l.Apply(ctx, []ops.Op{op}, nil)
		require.NoError(t, err)
		for _, r := range rs {
			for _, c := range r.Done {
				asleep[c.Task] = false
			}
			if r.Blocked {
				asleep[op.Task] = true
			}
		}
		n := 0
		for _, a := range asleep {
			if a {
				n++
			}
		}
		if n > engine.FewTasks {
			out["more than 4 asleep"] = true
		}
	}
	return out
}

// vmaDrawn names the vma operations of issue 21 a script holds.
func vmaDrawn(_ testing.TB, script []ops.Op) map[string]bool {
	out := map[string]bool{}
	sealed := false
	for _, op := range script {
		switch op.Kind {
		case ops.KindBrk:
			if op.VMA.BreakBytes != 0 {
				out["brk by bytes"] = true
			}
		case ops.KindSeal:
			if op.VMA.Pages == 0 {
				out["empty seal"] = true
			} else {
				out["seal"], sealed = true, true
			}
		case ops.KindMap, ops.KindUnmap, ops.KindProtect, ops.KindRemap:
			if op.Kind == ops.KindRemap && op.VMA.MayMove {
				out["remap maymove"] = true
			}
			if sealed {
				out["change after a seal"] = true
			}
		}
	}
	return out
}

// drawn names the refused-at-once calls a script holds.
func drawn(_ testing.TB, script []ops.Op) map[string]bool {
	out := map[string]bool{}
	for _, op := range script {
		switch {
		case op.Kind == ops.KindMsgctl && op.MCmd == ops.MsgInvalid:
			out["msgctl invalid"] = true
		case op.Kind == ops.KindShmctl && op.Cmd == ops.ShmInvalid:
			out["shmctl invalid"] = true
		case op.Kind == ops.KindSemctl && op.Sem.Cmd == ops.SemInvalid:
			out["semctl invalid"] = true
		case op.Kind == ops.KindSemop && op.Sem.NSops == 0:
			out["semop nsops 0"] = true
		}
		switch {
		case op.Kind == ops.KindSemop && op.BadBuf:
			out["semop bad sops"] = true
		case op.Kind == ops.KindSemop && op.Sem.Timeout == ops.SemBadPtr:
			out["semtimedop bad timeout"] = true
		case op.Kind == ops.KindSemctl && op.BadBuf:
			out["semctl bad buffer"] = true
		case op.Kind == ops.KindMsgsnd && op.BadBuf:
			out["msgsnd bad buffer"] = true
		case op.Kind == ops.KindMsgctl && op.BadBuf:
			out["msgctl bad buffer"] = true
		case op.Kind == ops.KindMsgrcv && op.BadBuf && op.MsgFlags&ops.MsgNowait == 0:
			out["receiver asleep with a bad buffer"] = true
		case op.Kind == ops.KindShmctl && op.BadBuf:
			out["shmctl bad buffer"] = true
		}
		shmAddrDrawn(op, out)
	}
	return out
}

// The generators reach every edge with every engine: in a few hundred
// scripts, each edge is expected ten times or more, and at least once is
// required. -reach.table=N prints the counts of N scripts per engine.
func TestGeneratorsReachTheEdges(t *testing.T) {
	n := *reachTable
	var table []string
	for _, e := range allEdges {
		for _, eng := range engines {
			scripts := e.scripts
			if n > 0 {
				scripts = n
			}
			counts := map[string]int{}
			gen := eng.scripts(e.sub)
			for seed := range uint64(scripts) {
				for name, ok := range e.reached(t, gen(seed)) {
					if ok {
						counts[name]++
					}
				}
			}
			for _, name := range e.names {
				table = append(table, fmt.Sprintf("%-4s %-26s %-11s %5d of %d", e.sub.Name, name, eng.name, counts[name], scripts))
				if n == 0 {
					require.NotZero(t, counts[name], "%s: no script of %d drawn by %s reaches %q", e.sub.Name, scripts, eng.name, name)
				}
			}
		}
	}
	t.Logf("edges reached:\n%s", strings.Join(table, "\n"))
}

// idsRecorder watches the allocator and the table of the optimized model
// run a script.
type idsRecorder struct {
	at65534 map[*ipcns.AllocState]bool
	reached map[string]bool
}

func (r *idsRecorder) Alloc(st *ipcns.AllocState, t ipcns.Table) (int, int, bool) {
	if t.Len() >= 64 {
		r.reached["more than 64 live"] = true
	}
	idx, seq, ok := ipcns.Cyclic.Alloc(st, t)
	switch {
	case !ok:
	case seq == ops.SeqMax-1:
		r.at65534[st] = true
		r.reached["seq at 65534"] = true
	case seq == 0 && r.at65534[st]:
		r.reached["seq wrapped"] = true
	}
	return idx, seq, ok
}

// recTable is the optimized table, watched for removals at max_idx while
// other objects remain (max_idx goes down).
type recTable struct {
	*optimized.IDR
	r *idsRecorder
}

func (t recTable) Remove(idx int) {
	if idx == t.MaxIdx() && t.Len() > 1 {
		t.r.reached["max_idx lowered"] = true
	}
	t.IDR.Remove(idx)
}

func idsReached(t testing.TB, script []ops.Op) map[string]bool {
	r := &idsRecorder{at65534: map[*ipcns.AllocState]bool{}, reached: map[string]bool{}}
	ns := ipcns.New(func() ipcns.Table { return recTable{optimized.NewIDR(), r} }, r)
	_, err := ops.Run(ns, ops.Config{}, script)
	require.NoError(t, err)
	return r.reached
}

// semRun runs a script on the optimized model with a semaphore quirk (0:
// none).
func semRun(t testing.TB, q semq.Quirk, script []ops.Op) ops.Outcome {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	ns.SetSemOptions(semq.Options{Structure: semq.PerSemaphore, Quirk: q})
	out, err := ops.Run(ns, ops.Config{}, script)
	require.NoError(t, err)
	return out
}

// semReached: the clamps of exit_sem and the restart of update_queue are
// reached where a model without them (semq's quirks) gives another
// outcome; a complex sleeper is ahead of a simple one on the same
// semaphore where a simple decrement goes to sleep on a semaphore that a
// complex operation, asleep on the same array, names.
func semReached(t testing.TB, script []ops.Op) map[string]bool {
	base := semRun(t, 0, script)
	out := map[string]bool{}
	for name, q := range map[string]semq.Quirk{
		"exit clamped at SEMVMX": semq.QuirkUndoNoUpperClamp,
		"exit clamped at 0":      semq.QuirkUndoNoLowerClamp,
		"restart after complex":  semq.QuirkNoRestartAfterComplex,
	} {
		out[name] = equiv.Compare(equiv.Exact, script, base, semRun(t, q, script)) != nil
	}
	var asleep [ops.NumTasks]*ops.Op
	for i, op := range script {
		r := base.Results[i]
		for _, c := range r.Done {
			asleep[c.Task] = nil
		}
		if op.Kind != ops.KindSemop || !r.Blocked {
			continue
		}
		if sops := op.Sem.SopList(); len(sops) == 1 && sops[0].Op < 0 {
			for _, other := range asleep {
				if other != nil && other.Obj == op.Obj && len(other.Sem.SopList()) > 1 && names(other.Sem.SopList(), sops[0].Num) {
					out["complex ahead of simple"] = true
				}
			}
		}
		asleep[op.Task] = &script[i]
	}
	return out
}

func names(sops []ops.Sop, num uint16) bool {
	for _, s := range sops {
		if s.Num == num {
			return true
		}
	}
	return false
}

// msgReached: after some step a queue holds exactly msgmnb bytes with
// qbytes msgmnb.
func msgReached(t testing.TB, script []ops.Op) map[string]bool {
	m, err := optimized.New()
	require.NoError(t, err)
	l := ops.NewLocal(ops.Info{Name: "optimized"}, m)
	ctx := context.Background()
	require.NoError(t, l.Reset(ctx, ops.Config{}))
	for _, op := range script {
		_, err := l.Apply(ctx, []ops.Op{op}, nil)
		require.NoError(t, err)
		snap, err := l.Snapshot(ctx, nil)
		require.NoError(t, err)
		for _, q := range snap.Queues {
			n := 0
			for _, m := range q.Msgs {
				n += len(m.Text)
			}
			if q.Qbytes == ops.DefaultMsgmnb && n == ops.DefaultMsgmnb {
				return map[string]bool{"queue at msgmnb": true}
			}
		}
	}
	return nil
}

// shmReached: a get asks for a segment of exactly shmmax bytes.
func shmReached(_ testing.TB, script []ops.Op) map[string]bool {
	for _, op := range script {
		if op.Kind == ops.KindGet && op.Type == ops.Shm && uint64(op.Size) == ops.DefaultShmmax {
			return map[string]bool{"segment at shmmax": true}
		}
	}
	return nil
}

// shmAddrDrawn names the shm address operations op is.
func shmAddrDrawn(op ops.Op, out map[string]bool) {
	switch {
	case op.Kind == ops.KindShmat && op.Addr.Win:
		out["shmat at a window page"] = true
		out["shmat rnd"] = out["shmat rnd"] || op.Flags&ops.ShmatRnd != 0
		out["shmat remap"] = out["shmat remap"] || op.Flags&ops.ShmatRemap != 0
	case op.Kind == ops.KindShmat && op.Addr == ops.ShmAddr{Off: 1} && op.Flags&ops.ShmatRnd != 0:
		out["shmat address 1 rnd remap"] = true
	case op.Kind == ops.KindShmdt && op.Addr.Win:
		out["shmdt at an address"] = true
	case op.Kind == ops.KindShmRead:
		out["shm read"] = true
	case op.Kind == ops.KindShmWrite:
		out["shm write"] = true
	case op.Kind == ops.KindGet && op.Huge:
		out["shmget hugetlb"] = true
	}
}
