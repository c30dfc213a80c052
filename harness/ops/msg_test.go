package ops

import (
	"strings"
	"testing"
)

func TestMsgTextRoundTrip(t *testing.T) {
	text := `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
msgsnd msg h1 type=5 size=3 fill=2 nowait -> ok
msgrcv msg h1 size=64 type=0 task=t1 -> type=5 text=cde
msgrcv msg h1 size=64 type=-3 noerror task=t2 -> blocked
msgsnd msg h1 type=1 size=2 fill=0 nowait as=1000 -> ok ; t2 type=1 text=ab
msgrcv msg h1 size=2 type=7 nowait except copy -> ENOMSG
msgsnd msg h1 type=9 size=100 fill=1 task=t3 -> blocked
msgctl msg h1 set qbytes=50 mode=0644 -> ok ; t3 ok
msgctl msg h1 stat -> ret=0 {` + "`" + `ROW` + "`" + `} qbytes=50
msgctl msg h1 ipc_info -> ret=0 msgpool=512000 msgmap=16384 msgmax=8192 msgmnb=16384 msgmni=32000 msgssz=16 msgtql=16384 msgseg=65535
rmid msg h1 -> ok ; t1 EIDRM ; t4 EIDRM
`
	row := FormatRow(Msg, Row{ID: 0, Mode: 0o644, Size: 100, Qnum: 1, Cpid: TaskPID(3, 0), Lpid: TaskPID(1, 0), Ctime: true, Atime: true})
	text = strings.Replace(text, "`ROW`", row, 1)
	s, err := ParseString(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(s); got != text {
		t.Fatalf("format(parse(x)) != x:\n%s\nvs\n%s", got, text)
	}
	for _, bad := range []string{
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgsnd msg h1 type=1 size=3 fill=0\n",           // t0 must not block
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgrcv msg h1 size=500 type=0 nowait\n",         // larger than the task buffer
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgctl msg h1 frob\n",                           // unknown command
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgsnd shm h1 type=1 size=3 fill=0 nowait\n",    // wrong type
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgsnd msg h1 type=1 size=3 fill=0 task=t16\n",  // no such task
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgrcv msg h1 size=4 type=0 task=t1 -> t1 ok\n", // bad result
	} {
		if _, err := ParseString(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
