package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operations of the msg subsystem (ipc/msg.c). A msgsnd or msgrcv issued by
// task t1..t15 may block; its task then sleeps until a later operation
// completes it, and that completion is reported in the later operation's
// result (Result.Done), never as a separate step.
const (
	// KindMsgsnd is msgsnd(id, {Mtype, text}, Size, flags): the text is Size
	// bytes made from Fill (see MsgText).
	KindMsgsnd Kind = 32 + iota
	// KindMsgrcv is msgrcv(id, buf, Size, Mtype, flags).
	KindMsgrcv
	// KindMsgctl is msgctl(id, MCmd, buf); IPC_RMID is KindRmid.
	KindMsgctl
)

// MaxRacingWakeups is the most tasks asleep on one message queue whose every
// running order the models follow when one operation wakes them all: the
// woken tasks retry in an order the kernel's scheduler picks, each order may
// leave the queue different, and the models keep every state that some
// order gives (5! = 120 orders). With more tasks asleep on one queue the
// models take only the order they were woken in, so a divergence there may
// be an order the models did not try: the generators never put more than
// this many to sleep on one queue.
const MaxRacingWakeups = 5

// Flags of msgsnd and msgrcv (Op.MsgFlags).
const (
	MsgNowait  = 1 << iota // IPC_NOWAIT
	MsgNoerror             // MSG_NOERROR
	MsgExcept              // MSG_EXCEPT
	MsgCopy                // MSG_COPY
)

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
	MsgInvalid                   // the command number -1, which no kernel has: EINVAL
)

var msgCmdNames = []enumName[MsgCmd]{
	{MsgIPCStat, "stat"}, {MsgIPCSet, "set"}, {MsgIPCInfo, "ipc_info"}, {MsgInfoCmd, "msg_info"},
	{MsgStat, "msg_stat"}, {MsgStatAny, "msg_stat_any"}, {MsgInvalid, "invalid"},
}

func (c MsgCmd) String() string {
	for _, n := range msgCmdNames {
		if n.v == c {
			return n.name
		}
	}
	return fmt.Sprintf("cmd%d", uint8(c))
}

// Default msg sysctls of a fresh namespace.
const (
	DefaultMsgmax = 8192
	DefaultMsgmnb = 16384
	// MsgTextMax is the longest text a script may receive (a msgrcv's
	// size), so that results stay short; a script may send up to msgmax
	// (two messages of msgmax fill a queue to msgmnb).
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

func formatMessage(m Message) string { return fmt.Sprintf("type=%d text=%s", m.Type, m.Text) }

func parseMessage(text string) (Message, error) {
	var m Message
	f := strings.Fields(text)
	if len(f) < 1 || len(f) > 2 {
		return m, fmt.Errorf("message %q: want type=N text=TEXT", text)
	}
	v, ok := strings.CutPrefix(f[0], "type=")
	t, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		return m, fmt.Errorf("message %q: want type=N text=TEXT", text)
	}
	m.Type = t
	if len(f) == 2 {
		txt, ok := strings.CutPrefix(f[1], "text=")
		if !ok {
			return m, fmt.Errorf("message %q: want type=N text=TEXT", text)
		}
		m.Text = txt
	}
	return m, nil
}

// messageResult is what msgrcv received: "type=N text=...".
type messageResult struct{}

func (messageResult) format(_ *Op, r *Result) string { return formatMessage(r.Msg) }

func (messageResult) parse(_ *Op, r *Result, text string) error {
	m, err := parseMessage(text)
	r.Msg = m
	return err
}

func msgInfoValue(name string, p func(*MsgInfo) *int64) valueOf {
	return valueOf{name, dec(func(r *Result) *int64 { return p(&r.MsgInfo) }, -1<<63, 1<<63-1, 0)}
}

var (
	// msgStatResult is the result of msgctl IPC_STAT and MSG_STAT*.
	msgStatResult = fieldsResult{ret, {"", rowField{Msg}},
		{"qbytes", dec(func(r *Result) *int64 { return &r.Qbytes }, -1<<63, 1<<63-1, 0)}}
	// msgInfoResult is the result of msgctl IPC_INFO and MSG_INFO.
	msgInfoResult = fieldsResult{ret,
		msgInfoValue("msgpool", func(in *MsgInfo) *int64 { return &in.Msgpool }),
		msgInfoValue("msgmap", func(in *MsgInfo) *int64 { return &in.Msgmap }),
		msgInfoValue("msgmax", func(in *MsgInfo) *int64 { return &in.Msgmax }),
		msgInfoValue("msgmnb", func(in *MsgInfo) *int64 { return &in.Msgmnb }),
		msgInfoValue("msgmni", func(in *MsgInfo) *int64 { return &in.Msgmni }),
		msgInfoValue("msgssz", func(in *MsgInfo) *int64 { return &in.Msgssz }),
		msgInfoValue("msgtql", func(in *MsgInfo) *int64 { return &in.Msgtql }),
		msgInfoValue("msgseg", func(in *MsgInfo) *int64 { return &in.Msgseg }),
	}
)

func msgctlResult(op *Op) ResultForm {
	switch op.MCmd {
	case MsgIPCStat, MsgStat, MsgStatAny:
		return msgStatResult
	case MsgIPCInfo, MsgInfoCmd:
		return msgInfoResult
	}
	return okResult{}
}

func msgFlagArgs(kind Kind) []Arg {
	flags := func(o *Op) *uint8 { return &o.MsgFlags }
	args := []Arg{flagBit("nowait", flags, MsgNowait)}
	if kind == KindMsgrcv {
		args = append(args, flagBit("noerror", flags, MsgNoerror), flagBit("except", flags, MsgExcept), flagBit("copy", flags, MsgCopy))
	}
	return append(args, argBadBuf)
}

// checkMsgSleeper: t0 is the main task, which must never block.
func checkMsgSleeper(op Op) error {
	if op.Task == 0 && op.MsgFlags&MsgNowait == 0 {
		return fmt.Errorf("t0 must use nowait: the main task cannot block (use task=t1..t%d)", MaxTask)
	}
	return nil
}

func isMsgSet(o *Op) bool { return o.MCmd == MsgIPCSet }

func init() {
	msg := []IPCType{Msg}
	mtype := func(o *Op) *int64 { return &o.Mtype }
	size := func(o *Op) *int64 { return &o.Size }
	register(SubsystemSpec{Name: "msg", Uses: []string{"ids", "tasks", "msg"}},
		KindSpec{Kind: KindMsgsnd, Name: "msgsnd", Doc: "msgsnd of a message of size bytes of a text drawn from fill; a task may block", Subsystem: "msg", Types: msg, Task: true, As: true, Races: true,
			Args: append([]Arg{argObject,
				named("type", dec(mtype, -1<<63, 1<<63-1, 1)),
				named("size", dec(size, -1<<63, 1<<63-1, 0)),
				named("fill", dec(func(o *Op) *uint8 { return &o.Fill }, 0, 255, 0)),
			}, msgFlagArgs(KindMsgsnd)...),
			Check: checkMsgSleeper},
		KindSpec{Kind: KindMsgrcv, Name: "msgrcv", Doc: "msgrcv of at most size bytes with a type and its search mode; a task may block", Subsystem: "msg", Types: msg, Task: true, As: true, Races: true,
			Args: append([]Arg{argObject,
				named("size", dec(size, -1<<63, MsgTextMax, 0)),
				named("type", dec(mtype, -1<<63, 1<<63-1, 0)),
			}, msgFlagArgs(KindMsgrcv)...),
			Result: messageResult{},
			Check:  checkMsgSleeper,
			Cause:  msgrcvSearch,
		},
		KindSpec{Kind: KindMsgctl, Name: "msgctl", Doc: "msgctl with a command (set takes qbytes=, mode= and gid=)", Subsystem: "msg", Types: msg, Task: true, As: true, Races: true,
			Reads: func(op Op) bool {
				return op.MCmd == MsgIPCStat || op.MCmd == MsgIPCInfo || op.MCmd == MsgInfoCmd || op.MCmd == MsgStat || op.MCmd == MsgStatAny
			},
			Args: []Arg{argObject,
				pos(enum(func(o *Op) *MsgCmd { return &o.MCmd }, msgCmdNames)),
				named("qbytes", dec(func(o *Op) *int64 { return &o.Value }, -1<<63, 1<<63-1, 0)).When(isMsgSet),
				argMode.When(isMsgSet),
				argGroup.When(isMsgSet),
				argBadBuf,
			},
			OpaqueIDs: func(op Op) bool { return op.MCmd >= MsgIPCInfo },
			Result:    byOp(msgctlResult),
		},
	)
}

// msgrcvSearch is the search a msgrcv's type picks: the first message
// (type=0), the first of that type (type>0), or the first of the lowest
// type up to its absolute value (type<0).
func msgrcvSearch(op Op) string {
	switch {
	case op.Mtype == 0:
		return "type=0"
	case op.Mtype > 0:
		return "type>0"
	}
	return "type<0"
}
