//go:build linux && amd64

package repro

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func init() {
	steps.Add(writer{body: text((*gen).msgsnd).body, mayBlock: msgMayBlock}, ops.KindMsgsnd)
	steps.Add(writer{body: text((*gen).msgrcv).body, mayBlock: msgMayBlock}, ops.KindMsgrcv)
	steps.Add(writer{body: (*gen).msgctl}, ops.KindMsgctl)
}

// msgMayBlock: a msgsnd or msgrcv without IPC_NOWAIT may sleep.
func msgMayBlock(op ops.Op) bool { return op.MsgFlags&ops.MsgNowait == 0 }

// msgFlags is the C expression of a msgsnd or msgrcv's flags.
func msgFlags(f uint8) string {
	var parts []string
	for _, x := range []struct {
		bit  uint8
		name string
	}{{ops.MsgNowait, "IPC_NOWAIT_"}, {ops.MsgNoerror, "010000"}, {ops.MsgExcept, "020000"}, {ops.MsgCopy, "040000"}} {
		if f&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " | ")
}

// msgRoom is the text room of a message buffer: a size outside
// 0..msgmax gets none (the kernel refuses it before reading any text).
func msgRoom(size int64) int64 {
	if size < 0 || size > ops.DefaultMsgmax {
		return 0
	}
	return size
}

func (g *gen) msgsnd(op ops.Op) string {
	s := fmt.Sprintf("\tstatic char buf[8 + %d];\n\t*(long *)buf = %dL;\n\tmsg_text(buf + 8, %d, %d);\n", msgRoom(op.Size)+1, op.Mtype, msgRoom(op.Size), op.Fill)
	if op.BadBuf {
		s += "\t(void)buf; /* badbuf: the call is given a bad address instead */\n"
	}
	call := fmt.Sprintf("long r = syscall(SYS_msgsnd, %s, %s, %dL, %s);", g.ref(op.Obj), buf(op, "buf"), op.Size, msgFlags(op.MsgFlags))
	return s + asWrap(op, call) + fail + "\tput(out, \"ok\");\n"
}

func (g *gen) msgrcv(op ops.Op) string {
	s := fmt.Sprintf("\tstatic char buf[8 + %d];\n", msgRoom(op.Size)+1)
	call := fmt.Sprintf("long r = syscall(SYS_msgrcv, %s, %s, %dL, %dL, %s);", g.ref(op.Obj), buf(op, "buf"), op.Size, op.Mtype, msgFlags(op.MsgFlags))
	return s + asWrap(op, call) + fail + "\tput(out, \"type=%ld text=%.*s\", *(long *)buf, (int)r, buf + 8);\n"
}

var msgCmd = map[ops.MsgCmd]string{
	ops.MsgIPCStat: "IPC_STAT_", ops.MsgIPCSet: "IPC_SET_", ops.MsgIPCInfo: "IPC_INFO_",
	ops.MsgInfoCmd: "12", ops.MsgStat: "11", ops.MsgStatAny: "13", ops.MsgInvalid: "-1",
}

func (g *gen) msgctl(op ops.Op) (string, error) {
	cmd, ok := msgCmd[op.MCmd]
	if !ok {
		return "", fmt.Errorf("msgctl command %s", op.MCmd)
	}
	id := g.ref(op.Obj)
	s := "\tstatic long buf[32];\n\tmemset(buf, 0, sizeof buf);\n"
	if op.MCmd == ops.MsgIPCSet {
		// uid and gid as they are (read with MSG_STAT_ANY, as root), the
		// group from gid= when given, the mode and qbytes of the op.
		s += fmt.Sprintf("\t{\n\t\tstatic long cur[32];\n\t\tlong r = syscall(SYS_msgctl, %s & 32767, 13, cur);\n\t\tif (r >= 0 && (int)r == (int)%s) {\n\t\t\tset_u32(buf, P_UID, U32(cur, P_UID));\n\t\t\tset_u32(buf, P_GID, U32(cur, P_GID));\n\t\t}\n\t}\n", id, id)
		if op.Group != 0 {
			s += fmt.Sprintf("\tset_u32(buf, P_GID, %d);\n", op.Group)
		}
		s += fmt.Sprintf("\tset_u32(buf, P_MODE, 0%o);\n\tset_i64(buf, 88, %dL);\n", op.Mode&0o777, op.Value)
	}
	s += asWrap(op, fmt.Sprintf("long r = syscall(SYS_msgctl, %s, %s, %s);", id, cmd, buf(op, "buf"))) + fail
	switch op.MCmd {
	case ops.MsgIPCStat, ops.MsgStat, ops.MsgStatAny:
		s += fmt.Sprintf("\tput(out, \"ret=%%ld \", %[1]s);\n\tput_msg_row(out, buf, %[1]s);\n\tput(out, \" qbytes=%%ld\", I64(buf, 88));\n", rowID(op.MCmd == ops.MsgIPCStat))
	case ops.MsgIPCInfo, ops.MsgInfoCmd:
		s += "\tput(out, \"ret=%ld msgpool=%d msgmap=%d msgmax=%d msgmnb=%d msgmni=%d msgssz=%d msgtql=%d msgseg=%d\", r, I32(buf, 0), I32(buf, 4), I32(buf, 8), I32(buf, 12), I32(buf, 16), I32(buf, 20), I32(buf, 24), U16(buf, 28));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
}
