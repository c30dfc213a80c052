package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operations of the msg subsystem (ipc/msg.c). A msgsnd or msgrcv issued by
// task t1..t4 may block; its task then sleeps until a later operation
// completes it, and that completion is reported in the later operation's
// result (Result.Done), never as a separate step.
const (
	// KindMsgsnd is msgsnd(id, {Mtype, text}, Size, flags): the text is Size
	// bytes made from Fill (see MsgText).
	KindMsgsnd Kind = iota + KindRmidForced + 1
	// KindMsgrcv is msgrcv(id, buf, Size, Mtype, flags).
	KindMsgrcv
	// KindMsgctl is msgctl(id, MCmd, buf); IPC_RMID is KindRmid.
	KindMsgctl
)

func init() {
	kindNames[KindMsgsnd] = "msgsnd"
	kindNames[KindMsgrcv] = "msgrcv"
	kindNames[KindMsgctl] = "msgctl"
}

// isMsgKind reports whether k is an operation of the msg subsystem.
func isMsgKind(k Kind) bool { return k == KindMsgsnd || k == KindMsgrcv || k == KindMsgctl }

// Flags of msgsnd and msgrcv (Op.MsgFlags).
const (
	MsgNowait  = 1 << iota // IPC_NOWAIT
	MsgNoerror             // MSG_NOERROR
	MsgExcept              // MSG_EXCEPT
	MsgCopy                // MSG_COPY
)

var msgFlagNames = []struct {
	bit  uint8
	name string
}{{MsgNowait, "nowait"}, {MsgNoerror, "noerror"}, {MsgExcept, "except"}, {MsgCopy, "copy"}}

// MsgCmd is the command of a msgctl.
type MsgCmd uint8

// The msgctl commands the vocabulary has.
const (
	MsgIPCStat MsgCmd = iota + 1 // IPC_STAT: the row and qbytes
	MsgIPCSet                    // IPC_SET: Op.Value is the new qbytes, Op.Mode the mode
	MsgIPCInfo                   // IPC_INFO: struct msginfo, returns the max idx
	MsgInfoCmd                   // MSG_INFO: struct msginfo with the namespace's usage
	MsgStat                      // MSG_STAT on an index: returns the full id
	MsgStatAny                   // MSG_STAT_ANY: MSG_STAT without the read check
)

var msgCmdNames = map[MsgCmd]string{
	MsgIPCStat: "stat", MsgIPCSet: "set", MsgIPCInfo: "ipc_info", MsgInfoCmd: "msg_info",
	MsgStat: "msg_stat", MsgStatAny: "msg_stat_any",
}

func (c MsgCmd) String() string {
	if n, ok := msgCmdNames[c]; ok {
		return n
	}
	return fmt.Sprintf("cmd%d", uint8(c))
}

// Default msg sysctls of a fresh namespace.
const (
	DefaultMsgmax = 8192
	DefaultMsgmnb = 16384
	// MsgTextMax is the longest text a script may send or receive: the
	// kernel adapter's task buffers hold the message there and back.
	MsgTextMax = 200
)

// MsgText is the text of a message of size bytes made from fill: letters,
// so that scripts and reports show it as it is.
func MsgText(fill uint8, size int64) string {
	if size <= 0 {
		return ""
	}
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte((int(fill)+i)%26)
	}
	return string(b)
}

// Message is a received message: its type and the bytes the receiver got.
type Message struct {
	Type int64
	Text string
}

// Completion is a task, asleep in an earlier msgsnd or msgrcv, whose call
// returned during an operation: Err, or for a receiver the message.
type Completion struct {
	Task uint8
	Err  Errno
	Msg  Message // the message a receiver got
	Recv bool    // a receiver got Msg (Err is OK)
}

// MsgInfo is what IPC_INFO or MSG_INFO fills in (struct msginfo).
type MsgInfo struct {
	Msgpool, Msgmap, Msgmax, Msgmnb, Msgmni, Msgssz, Msgtql, Msgseg int64
}

// QueueState is one message queue in a snapshot: the messages, qbytes and
// which tasks sleep on it (the order in which they wait is not observable
// on the kernel, so they are sets, sorted).
type QueueState struct {
	ID        int64
	Msgs      []Message
	Qbytes    int64
	Senders   []uint8
	Receivers []uint8
}

// SortCompletions puts completions in task order, their canonical order
// (which of several woken tasks returned first is not observable).
func SortCompletions(d []Completion) {
	slices.SortStableFunc(d, func(a, b Completion) int { return int(a.Task) - int(b.Task) })
}

func formatMsgOp(b *strings.Builder, op Op) {
	fmt.Fprintf(b, " %s", formatRef(op.Obj))
	switch op.Kind {
	case KindMsgsnd:
		fmt.Fprintf(b, " type=%d size=%d fill=%d", op.Mtype, op.Size, op.Fill)
	case KindMsgrcv:
		fmt.Fprintf(b, " size=%d type=%d", op.Size, op.Mtype)
	case KindMsgctl:
		fmt.Fprintf(b, " %s", op.MCmd)
		if op.MCmd == MsgIPCSet {
			fmt.Fprintf(b, " qbytes=%d mode=%04o", op.Value, op.Mode)
		}
	}
	for _, f := range msgFlagNames {
		if op.MsgFlags&f.bit != 0 {
			b.WriteString(" " + f.name)
		}
	}
}

// parseMsgArg reads one argument of a msg operation; false if it is not one.
func parseMsgArg(op *Op, a string) (bool, error) {
	for _, f := range msgFlagNames {
		if a == f.name && op.Kind != KindMsgctl {
			op.MsgFlags |= f.bit
			return true, nil
		}
	}
	name, val, hasVal := strings.Cut(a, "=")
	if !hasVal {
		if op.Kind == KindMsgctl && op.MCmd == 0 {
			for c, n := range msgCmdNames {
				if n == a {
					op.MCmd = c
					return true, nil
				}
			}
			return false, fmt.Errorf("unknown msgctl command %q", a)
		}
		return false, nil
	}
	var err error
	switch {
	case name == "type" && op.Kind != KindMsgctl:
		op.Mtype, err = strconv.ParseInt(val, 10, 64)
	case name == "size" && op.Kind != KindMsgctl:
		op.Size, err = strconv.ParseInt(val, 10, 64)
	case name == "fill" && op.Kind == KindMsgsnd:
		var v uint64
		v, err = strconv.ParseUint(val, 10, 8)
		op.Fill = uint8(v)
	case name == "qbytes" && op.Kind == KindMsgctl && op.MCmd == MsgIPCSet:
		op.Value, err = strconv.ParseInt(val, 10, 64)
	case name == "mode" && op.Kind == KindMsgctl && op.MCmd == MsgIPCSet:
		var m uint64
		m, err = strconv.ParseUint(val, 8, 16)
		if err == nil && m > 0o777 {
			err = fmt.Errorf("want octal 0..0777")
		}
		op.Mode = uint16(m)
	default:
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s %q: %v", name, val, err)
	}
	return true, nil
}

// checkMsgOp validates a parsed msg operation.
func checkMsgOp(op Op) error {
	switch op.Kind {
	case KindMsgsnd:
		if op.Size > MsgTextMax && op.Size <= DefaultMsgmax {
			return fmt.Errorf("msgsnd size %d: scripts send at most %d bytes (or more than msgmax, %d, for EINVAL)", op.Size, MsgTextMax, DefaultMsgmax)
		}
	case KindMsgrcv:
		if op.Size > MsgTextMax {
			return fmt.Errorf("msgrcv size %d: scripts receive into at most %d bytes", op.Size, MsgTextMax)
		}
	case KindMsgctl:
		if op.MCmd == 0 {
			return fmt.Errorf("msgctl needs a command (stat, set, ipc_info, msg_info, msg_stat, msg_stat_any)")
		}
	}
	if op.Kind != KindMsgctl && op.Task == 0 && op.MsgFlags&MsgNowait == 0 {
		return fmt.Errorf("%s by t0 must be nowait: the main task cannot block (use task=t1..t%d)", op.Kind, MaxTask)
	}
	return nil
}

func formatMessage(m Message) string { return fmt.Sprintf("type=%d text=%s", m.Type, m.Text) }

func parseMessage(text string) (Message, error) {
	var m Message
	f := strings.Fields(text)
	if len(f) < 1 || len(f) > 2 {
		return m, fmt.Errorf("message %q: want type=N text=...", text)
	}
	v, ok := strings.CutPrefix(f[0], "type=")
	t, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		return m, fmt.Errorf("message %q: want type=N text=...", text)
	}
	m.Type = t
	if len(f) == 2 {
		txt, ok := strings.CutPrefix(f[1], "text=")
		if !ok {
			return m, fmt.Errorf("message %q: want type=N text=...", text)
		}
		m.Text = txt
	}
	return m, nil
}

var msgInfoNames = []string{"msgpool", "msgmap", "msgmax", "msgmnb", "msgmni", "msgssz", "msgtql", "msgseg"}

func msgInfoFields(in *MsgInfo) []*int64 {
	return []*int64{&in.Msgpool, &in.Msgmap, &in.Msgmax, &in.Msgmnb, &in.Msgmni, &in.Msgssz, &in.Msgtql, &in.Msgseg}
}

// formatMsgResult writes the success result of a msg operation.
func formatMsgResult(op Op, r Result) string {
	if r.Blocked {
		return "blocked"
	}
	switch op.Kind {
	case KindMsgrcv:
		return formatMessage(r.Msg)
	case KindMsgctl:
		switch op.MCmd {
		case MsgIPCStat, MsgStat, MsgStatAny:
			return fmt.Sprintf("ret=%d %s qbytes=%d", r.ID, FormatRow(Msg, r.Row), r.Qbytes)
		case MsgIPCInfo, MsgInfoCmd:
			var parts []string
			for i, p := range msgInfoFields(&r.MsgInfo) {
				parts = append(parts, fmt.Sprintf("%s=%d", msgInfoNames[i], *p))
			}
			return fmt.Sprintf("ret=%d %s", r.ID, strings.Join(parts, " "))
		}
	}
	return "ok"
}

func parseMsgResult(op Op, text string) (Result, error) {
	var r Result
	if text == "blocked" {
		r.Blocked = true
		return r, nil
	}
	switch op.Kind {
	case KindMsgrcv:
		m, err := parseMessage(text)
		r.Msg = m
		return r, err
	case KindMsgctl:
		if op.MCmd == MsgIPCSet {
			break
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			return r, fmt.Errorf("msgctl result %q: want ret=N ...", text)
		}
		v, ok := strings.CutPrefix(f[0], "ret=")
		ret, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return r, fmt.Errorf("msgctl result %q: want ret=N ...", text)
		}
		r.ID = ret
		rest := f[1:]
		switch op.MCmd {
		case MsgIPCStat, MsgStat, MsgStatAny:
			if len(rest) < 1 {
				return r, fmt.Errorf("msgctl stat result %q: want ret=N <row> qbytes=N", text)
			}
			q, ok := strings.CutPrefix(rest[len(rest)-1], "qbytes=")
			qb, err := strconv.ParseInt(q, 10, 64)
			if !ok || err != nil {
				return r, fmt.Errorf("msgctl stat result %q: want ret=N <row> qbytes=N", text)
			}
			r.Qbytes = qb
			row, err := ParseRow(Msg, strings.Join(rest[:len(rest)-1], " "))
			if err != nil {
				return r, err
			}
			r.Row = row
		case MsgIPCInfo, MsgInfoCmd:
			fields := msgInfoFields(&r.MsgInfo)
			if len(rest) != len(fields) {
				return r, fmt.Errorf("msgctl info result %q: want %d fields", text, len(fields))
			}
			for i, a := range rest {
				v, ok := strings.CutPrefix(a, msgInfoNames[i]+"=")
				n, err := strconv.ParseInt(v, 10, 64)
				if !ok || err != nil {
					return r, fmt.Errorf("msgctl info field %q: want %s=N", a, msgInfoNames[i])
				}
				*fields[i] = n
			}
		}
		return r, nil
	}
	if text != "ok" {
		return r, fmt.Errorf("%s result %q: want ok, blocked or an error name", op.Kind, text)
	}
	return r, nil
}

// formatDone writes the completions of a result: " ; t1 ok ; t2 type=1 text=ab".
func formatDone(done []Completion) string {
	var b strings.Builder
	for _, c := range done {
		fmt.Fprintf(&b, " ; t%d ", c.Task)
		switch {
		case c.Err != OK:
			b.WriteString(c.Err.String())
		case c.Recv:
			b.WriteString(formatMessage(c.Msg))
		default:
			b.WriteString("ok")
		}
	}
	return b.String()
}

func parseDone(parts []string) ([]Completion, error) {
	var out []Completion
	for _, p := range parts {
		p = strings.TrimSpace(p)
		ts, rest, _ := strings.Cut(p, " ")
		task, err := parseTask(ts)
		if err != nil {
			return nil, fmt.Errorf("completion %q: %v", p, err)
		}
		c := Completion{Task: task}
		switch {
		case rest == "ok":
		case strings.HasPrefix(rest, "type="):
			c.Recv = true
			if c.Msg, err = parseMessage(rest); err != nil {
				return nil, err
			}
		default:
			if c.Err, err = ParseErrno(rest); err != nil || c.Err == OK {
				return nil, fmt.Errorf("completion %q: want ok, type=N text=... or an error name", p)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
