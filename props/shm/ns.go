package shm

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// visitKey is the key a visit to another namespace makes its segment with
// (there; the script's namespace uses keyPool).
const visitKey = 0x5301

// visit draws a visit to a new IPC namespace (engine.Visit): task t leaves
// (its segments in the script's namespace orphaned: exit_shm), makes a
// segment there by a key and attaches it; a second task u, when there is
// one, joins first and reads its nattch after t left. Back home (by
// setns), t detaches it: the old namespace's segment loses an attachment.
// Then t0 looks the key and the id up in the script's namespace. The
// segment's and the attachment's handles are never drawn again.
func (s *Shadow) visit(src engine.Source) ops.Op {
	t, u := engine.Visitors(src, s.homeTasks())
	s.orphan(int(t))
	s.NextHandle++
	s.nextAtt++
	h, a := s.NextHandle, s.nextAtt
	ref := ops.Ref{Handle: h}
	stat := ops.Op{Kind: ops.KindShmctl, Type: ops.Shm, Obj: ref, Cmd: ops.ShmIPCStat}
	during := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Shm, Bind: h, Key: visitKey, Creat: true, Mode: 0o666, Size: engine.Pick(src, sizePool[:4], "size"), Task: t},
		{Kind: ops.KindShmat, Type: ops.Shm, Bind: a, Obj: ref, Task: t},
		{Kind: ops.KindGet, Type: ops.Shm, Key: visitKey, Mode: 0o666, Task: t},
	}
	stat.Task = u
	v := engine.Visit(src, t, u, s.Away == 0, during, []ops.Op{{Kind: ops.KindShmdt, Type: ops.Shm, Att: a, Task: t}, stat})
	if u == 0 {
		v = append(v, ops.Op{Kind: ops.KindShmdt, Type: ops.Shm, Att: a, Task: t})
	}
	s.Plan.Add(v[1:]...)
	stat.Task = 0
	s.Plan.Add(ops.Op{Kind: ops.KindGet, Type: ops.Shm, Key: visitKey, Mode: 0o666}, stat)
	return v[0]
}

// homeTasks lists the tasks t1..Span in the script's namespace.
func (s *Shadow) homeTasks() []uint8 {
	var home []uint8
	for t := uint8(1); int(t) <= s.Span; t++ {
		if !s.Away.Has(t) {
			home = append(home, t)
		}
	}
	return home
}
