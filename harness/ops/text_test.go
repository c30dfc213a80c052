package ops

import (
	"strings"
	"testing"
)

// The parser is strict: each of these is refused with one line naming the
// file and line, echoing at most a short excerpt of the input.
func TestStrictParser(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	for _, c := range []struct{ name, text, want string }{
		{"empty expectation", "subsystem ids\nh1 = get msg key=0x0 mode=0600 ->\n", "bad.ops:2: expected result: empty result"},
		{"partial expectation", "subsystem ids\nh1 = get msg key=0x1 creat mode=0600\nstat msg h1 -> mode=0600\n", "bad.ops:3: expected result: result \"mode=0600\": want key=N mode=N owner=N size=N"},
		{"no subsystem", "h1 = get msg key=0x0 mode=0600\n", "bad.ops:1: the first line must be 'subsystem NAME'"},
		{"unknown subsystem", "subsystem frob\n", "bad.ops:1: unknown subsystem \"frob\""},
		{"kind of another subsystem", "subsystem ids\nshmdt shm a1\n", "bad.ops:2: shmdt is not an operation of a ids script"},
		{"unbound handle", "subsystem ids\nrmid msg h3\n", "bad.ops:2: handle h3 is used before any line binds it"},
		{"unbound attachment", "subsystem shm\nshmdt shm a1\n", "bad.ops:2: handle a1 is used before any line binds it"},
		{"rebound handle", "subsystem ids\nh1 = get msg key=0x0 mode=0600\nh1 = get msg key=0x0 mode=0600\n", "bad.ops:3: handle h1 is already bound on line 2"},
		{"wrong handle class", "subsystem shm\nh1 = get shm key=0x0 mode=0600 size=1\nh2 = shmat shm h1\n", "bad.ops:3: shmat binds a handle aN, not hN"},
		{"empty script", "subsystem ids\n# nothing\n", "bad.ops: no operations"},
		{"empty file", "", "bad.ops: no 'subsystem' line"},
		{"unknown operation", "subsystem ids\nfrobnicate msg\n", "bad.ops:2: unknown operation \"frobnicate\""},
		{"missing argument", "subsystem ids\nget msg key=0x1\n", "bad.ops:2: get needs mode="},
		{"twice", "subsystem ids\nget msg key=0x1 key=0x2 mode=0600\n", "bad.ops:2: get: key given twice"},
		{"as not allowed", "subsystem shm\nh1 = get shm key=0x0 mode=0600 size=1\na1 = shmat shm h1\nshmdt shm a1 as=5\n", "bad.ops:4: unexpected argument \"as=5\" for shmdt"},
		{"long line", "subsystem ids\nget msg key=0x" + long + " mode=0600\n", "bad.ops:2: line longer than 65536 bytes"},
		{"long token", "subsystem ids\nget msg key=0x" + long[:60000] + " mode=0600\n", "bad.ops:2: get key: key \"0xxxxxxxx"},
		{"churn too big", "subsystem ids\nchurn msg 100000000\n", "bad.ops:2: churn: \"100000000\": want a decimal integer in 1..8388608"},
	} {
		_, err := Parse("bad.ops", strings.NewReader(c.text))
		if err == nil {
			t.Errorf("%s: parsed", c.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s: error %q, want it to start with %q", c.name, msg, c.want)
		}
		if strings.Contains(msg, "\n") || len(msg) > 200 {
			t.Errorf("%s: error is not one short line (%d bytes)", c.name, len(msg))
		}
	}
}

// Every result form reads back what it writes, and refuses a result with a
// field missing or added.
func TestResultsAreComplete(t *testing.T) {
	for _, c := range []struct{ op, result string }{
		{"stat msg id=3", "key=0x1 mode=0600 owner=0 size=0"},
		{"shmctl shm id=1 ipc_info", "ret=2 shmmax=1 shmmin=1 shmmni=4096 shmseg=4096 shmall=1"},
		{"msgctl msg id=1 msg_info", "ret=0 msgpool=1 msgmap=0 msgmax=8192 msgmnb=16384 msgmni=32000 msgssz=16 msgtql=0 msgseg=65535"},
	} {
		op, err := ParseOp(c.op)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseResult(op, c.result)
		if err != nil {
			t.Fatalf("%s -> %s: %v", c.op, c.result, err)
		}
		if got := FormatResult(op, r); got != c.result {
			t.Errorf("%s: %s read back as %s", c.op, c.result, got)
		}
		fields := strings.Fields(c.result)
		if _, err := ParseResult(op, strings.Join(fields[:len(fields)-1], " ")); err == nil {
			t.Errorf("%s: a result without its last field was accepted", c.op)
		}
		if _, err := ParseResult(op, c.result+" extra=1"); err == nil {
			t.Errorf("%s: a result with an extra field was accepted", c.op)
		}
	}
}
