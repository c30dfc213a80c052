package msg

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// visitKeys are the keys a visit to another namespace makes its queue with
// (there, never in the script's namespace).
var visitKeys = []int32{0x4d51, 0x4d52}

// visit draws a visit to a new IPC namespace (engine.Visit): task t makes
// a queue there by a key, finds it again by the key, sends to it without
// waiting and reads MSG_INFO (that namespace's counts); a second task u,
// when one is free, joins and receives from it after t left. Then t0 looks
// the key and the id up in the script's namespace, where neither is the
// visit's. The queue's handle is never drawn again.
func (s *Shadow) visit(src Source) ops.Op {
	t, u := engine.Visitors(src, s.freeTasks())
	s.NextHandle++
	h := s.NextHandle
	ref := ops.Ref{Handle: h}
	key := pick(src, visitKeys, "key")
	during := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: h, Key: key, Creat: true, Mode: 0o666, Task: t},
		{Kind: ops.KindGet, Type: ops.Msg, Key: key, Mode: 0o666, Task: t},
		{Kind: ops.KindMsgsnd, Type: ops.Msg, Obj: ref, Mtype: 1, Size: pick(src, sizePool, "size"), Fill: uint8(src.Intn(26, "fill")), MsgFlags: ops.MsgNowait, Task: t},
		{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgInfoCmd, Task: t},
	}
	after := []ops.Op{{Kind: ops.KindMsgrcv, Type: ops.Msg, Obj: ref, Size: pick(src, bufPool, "bufsize"), MsgFlags: ops.MsgNowait | ops.MsgNoerror, Task: u}}
	v := engine.Visit(src, t, u, s.Away == 0, during, after)
	s.Plan.Add(v[1:]...)
	s.Plan.Add(
		ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: key, Mode: 0o666},
		ops.Op{Kind: ops.KindMsgctl, Type: ops.Msg, Obj: ref, MCmd: ops.MsgIPCStat})
	return v[0]
}

// freeTasks lists the tasks t1..Span at home and awake.
func (s *Shadow) freeTasks() []uint8 { return s.Away.Home(engine.FreeTasks(&s.asleep, s.Span)) }
