package testkit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proc is a process as its /proc/PID/stat shows it.
type Proc struct {
	PID   int
	PPID  int
	Comm  string // the command name, without its parentheses
	State string // R, S, D, Z, X, ...
}

// Alive reports whether the process has not exited (neither a zombie nor
// dead).
func (p Proc) Alive() bool { return p.State != "Z" && p.State != "X" }

// ReadProc reads /proc/PID/stat; ok is false where the process is gone or
// the file does not parse.
func ReadProc(pid int) (Proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// it ends at the last ')'.
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Proc{}, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 2 {
		return Proc{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, PPID: ppid, Comm: s[open+1 : closing], State: f[0]}, true
}

// Running reports whether process pid is there and has not exited
// (neither a zombie nor dead).
func Running(pid int) bool {
	p, ok := ReadProc(pid)
	return ok && p.Alive()
}

// Procs lists the processes in /proc now; those that go while it reads are
// left out. The error is that of reading /proc itself.
func Procs() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := ReadProc(pid); ok {
			out = append(out, p)
		}
	}
	return out, err
}

// Children lists the processes whose parent is ppid (none where /proc
// cannot be read).
func Children(ppid int) []Proc {
	var out []Proc
	procs, _ := Procs()
	for _, p := range procs {
		if p.PPID == ppid {
			out = append(out, p)
		}
	}
	return out
}

// Cmdline returns a process's command line, its arguments separated by NUL
// bytes ("" where the process is gone).
func Cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

// SigIgn returns the mask of the signals a process ignores (SigIgn in
// /proc/PID/status); a process without one fails the test.
func SigIgn(t testing.TB, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			return mask
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return 0
}
