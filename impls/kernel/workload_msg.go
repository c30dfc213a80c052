//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// fullQueue builds the msg-full-queue workload on the real kernel: a queue
// of 64 bytes filled with eight 8-byte messages, and n sender threads of this
// process, each moved into the worker's namespace, asleep in msgsnd with 16
// bytes (more than one receive frees). The measured part is MsgRounds rounds
// of one receive and one refill on the worker. Since 4.9 a receive wakes
// none of the senders (ss_wakeup still walks them all); before, it woke
// every one, to find the queue still full and sleep again.
//
// The probe counts what the senders went through: "wakeups", the
// voluntary context switches of the sender threads (each is a sleep after a
// wake-up: a sender woken for nothing sleeps again), "ctxt_switches", those
// and the involuntary ones, and "receives", the part's msgrcv calls. It
// waits for every sender to be asleep in msgsnd again before it reads them.
//
// Every error path removes the queue, which wakes every sender already
// asleep (EIDRM) and so ends its thread: nothing is left behind.
func fullQueue(n int) (r run, err error) {
	if err := checkSleepers(n); err != nil {
		return r, err
	}
	id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: ops.IPCPrivate, Mode: 0o600})
	if e != 0 {
		return r, fmt.Errorf("msgget: %v", e)
	}
	remove := func() { _ = ipcCtl(ops.Msg, id, unix.IPC_RMID, nil) }
	defer func() {
		if err != nil {
			remove()
		}
	}()
	if err := fillQueue(id); err != nil {
		return r, err
	}
	senders, err := startJoined(n, "sender", func(int) {
		m := [4]uint64{2}
		for {
			_, _, e := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&m[0])), 16, 0, 0, 0)
			if e != unix.EINTR { // EIDRM at teardown
				return
			}
		}
	})
	if err != nil {
		return r, err
	}
	if err := waitAsleep(senders); err != nil {
		return r, err
	}
	var receives int64
	r.part = func() error {
		err := receiveRefill(id)
		receives += ops.MsgRounds
		return err
	}
	r.teardown = remove
	r.probe = func() (map[string]int64, error) {
		if err := waitAsleep(senders); err != nil {
			return nil, err
		}
		vol, nonvol, err := contextSwitches(senders)
		if err != nil {
			return nil, err
		}
		return map[string]int64{"wakeups": vol, "ctxt_switches": vol + nonvol, "receives": receives}, nil
	}
	return r, nil
}

// contextSwitches sums the voluntary and the involuntary context switches
// of threads tids of this process (/proc/self/task/TID/status).
func contextSwitches(tids []int) (vol, nonvol int64, err error) {
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
		if err != nil {
			return 0, 0, fmt.Errorf("thread %d: %w", tid, err)
		}
		var seen int
		for _, line := range strings.Split(string(b), "\n") {
			for name, sum := range map[string]*int64{"voluntary_ctxt_switches:": &vol, "nonvoluntary_ctxt_switches:": &nonvol} {
				if v, ok := strings.CutPrefix(line, name); ok {
					x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					if err != nil {
						return 0, 0, fmt.Errorf("thread %d: %s %w", tid, name, err)
					}
					*sum += x
					seen++
				}
			}
		}
		if seen != 2 {
			return 0, 0, fmt.Errorf("thread %d: no context switch counts in its status", tid)
		}
	}
	return vol, nonvol, nil
}

// fillQueue makes queue id hold 64 bytes and fills it with eight 8-byte
// messages.
func fillQueue(id int64) error {
	var ds statBuf
	if e := ipcCtl(ops.Msg, id, unix.IPC_STAT, &ds); e != 0 {
		return fmt.Errorf("IPC_STAT: %v", e)
	}
	(*msqid64DS)(unsafe.Pointer(&ds.ds)).qbytes = 64
	if e := ipcCtl(ops.Msg, id, unix.IPC_SET, &ds); e != 0 {
		return fmt.Errorf("IPC_SET qbytes 64: %v", e)
	}
	for range 8 {
		if e := sendNowait(id); e != 0 {
			return fmt.Errorf("filling the queue: %v", e)
		}
	}
	return nil
}

// sendNowait sends an 8-byte message of type 1 to queue id, IPC_NOWAIT.
func sendNowait(id int64) unix.Errno {
	msg := [4]uint64{1}
	_, _, e := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&msg[0])), 8, unix.IPC_NOWAIT, 0, 0)
	return e
}

// receiveRefill is the measured part of msg-full-queue: MsgRounds rounds
// of one receive and one refill.
func receiveRefill(id int64) error {
	var buf [4]uint64
	for range ops.MsgRounds {
		if _, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), 8, 1, unix.IPC_NOWAIT, 0); e != 0 {
			return fmt.Errorf("msgrcv: %v", e)
		}
		if e := sendNowait(id); e != 0 {
			return fmt.Errorf("refill: %v", e)
		}
	}
	return nil
}

// startJoined starts n threads of this process, each locked and moved into
// the worker's namespace (setns), running serve(i) once it is there, and
// returns their ids when every one has answered: nothing is left
// unaccounted for. A thread that could not join fails it (what names the
// threads in the message); those that joined run on, and the caller's
// teardown ends them.
func startJoined(n int, what string, serve func(i int)) ([]int, error) {
	nsFD, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the worker's namespace: %w", err)
	}
	defer unix.Close(nsFD) // every thread has joined, or failed to, by then
	tids := make(chan int, n)
	for i := range n {
		worker.GoLocked(func() {
			if _, _, e := unix.RawSyscall(unix.SYS_SETNS, uintptr(nsFD), unix.CLONE_NEWIPC, 0); e != 0 {
				tids <- -int(e)
				return
			}
			tids <- unix.Gettid()
			serve(i)
		})
	}
	var joined []int
	var joinErr error
	for range n {
		tid := <-tids
		if tid < 0 {
			joinErr = fmt.Errorf("a %s thread could not join the namespace: %v", what, unix.Errno(-tid))
			continue
		}
		joined = append(joined, tid)
	}
	return joined, joinErr
}

// waitAsleep waits until every thread sleeps in msgsnd (state S, and
// /proc/<pid>/syscall inside the call: task.SleepsInCall): evidence, not a
// delay. Between two looks it waits from 10 µs, doubling up to 1 ms.
func waitAsleep(tids []int) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, tid := range tids {
		base := "/proc/self/task/" + strconv.Itoa(tid) + "/"
		for wait := 10 * time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
			stat, err1 := os.ReadFile(base + "stat")
			sc, err2 := os.ReadFile(base + "syscall")
			if err1 != nil || err2 != nil {
				return fmt.Errorf("sender thread %d: %v %v", tid, err1, err2)
			}
			if task.SleepsInCall(stat, sc) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("thread %d did not fall asleep in msgsnd", tid)
			}
			time.Sleep(wait)
		}
	}
	return nil
}

// pingPong is pmsg-shared-like: n pairs of queues, each with a server
// thread of this process (moved into the worker's namespace) asleep in
// msgrcv on its request queue and answering on its response queue. The
// measured part sends one request to every server, then collects every
// answer, blocking, MsgRounds times: the wake-ups the 2016 series moved out
// of the queue lock are on this path.
//
// Every error path removes the queues, which ends every server already
// started (EIDRM).
func pingPong(n int) (part func() error, teardown func(), err error) {
	if err := checkSleepers(n); err != nil {
		return nil, nil, err
	}
	qs := make([]int64, 0, 2*n) // the queues made so far (0 is an id too)
	remove := func() {
		for _, q := range qs {
			_ = ipcCtl(ops.Msg, q, unix.IPC_RMID, nil)
		}
	}
	defer func() {
		if err != nil {
			remove()
		}
	}()
	for range 2 * n {
		id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: ops.IPCPrivate, Mode: 0o600})
		if e != 0 {
			return nil, nil, fmt.Errorf("msgget: %v", e)
		}
		qs = append(qs, id)
	}
	if _, err := startJoined(n, "server", func(i int) { serve(qs[2*i], qs[2*i+1]) }); err != nil {
		return nil, nil, err
	}
	return func() error { return pingRounds(qs) }, remove, nil
}

// serve answers every request on queue req on queue resp, until the queues
// go (EIDRM).
func serve(req, resp int64) {
	var m [2]uint64
	for {
		if e := msgCall(unix.SYS_MSGRCV, req, &m, 8); e != 0 {
			return // EIDRM at teardown
		}
		if e := msgCall(unix.SYS_MSGSND, resp, &m, 4); e != 0 {
			return
		}
	}
}

// pingRounds is the measured part of msg-ping-pong: MsgRounds times, a
// request to every server, then every answer.
func pingRounds(qs []int64) error {
	m := [2]uint64{1, 0x676e6970} // mtype 1, "ping"
	for range ops.MsgRounds {
		for i := 0; i < len(qs); i += 2 {
			if e := msgCall(unix.SYS_MSGSND, qs[i], &m, 4); e != 0 {
				return fmt.Errorf("msgsnd: %v", e)
			}
		}
		for i := 1; i < len(qs); i += 2 {
			if e := msgCall(unix.SYS_MSGRCV, qs[i], &m, 8); e != 0 {
				return fmt.Errorf("msgrcv: %v", e)
			}
		}
	}
	return nil
}

// msgCall is msgsnd(q, m, size, 0) or msgrcv(q, m, size, 0, 0) (the same
// arguments), again after EINTR (the Go runtime signals its threads).
func msgCall(nr uintptr, q int64, m *[2]uint64, size uintptr) unix.Errno {
	for {
		_, _, e := unix.Syscall6(nr, uintptr(q), uintptr(unsafe.Pointer(&m[0])), size, 0, 0, 0)
		if e != unix.EINTR {
			return e
		}
	}
}
