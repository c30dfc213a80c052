//go:build linux && amd64

package kernel

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// fullQueue builds the msg-full-queue workload on the real kernel: a queue
// of 64 bytes filled with eight 8-byte messages, and n sender threads of this
// process, each moved into the worker's namespace, asleep in msgsnd with 16
// bytes (more than one receive frees). The measured part is MsgRounds rounds
// of one receive and one refill on the worker. The kernel counts nothing
// for us; the wall time shows what each receive costs with n sleepers (since
// 4.9 it wakes none of them, but ss_wakeup still walks them all).
//
// Every error path removes the queue, which wakes every sender already
// asleep (EIDRM) and so ends its thread: nothing is left behind.
func fullQueue(n int) (part func() error, teardown func(), err error) {
	if err := checkSleepers(n); err != nil {
		return nil, nil, err
	}
	id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: ops.IPCPrivate, Mode: 0o600})
	if e != 0 {
		return nil, nil, fmt.Errorf("msgget: %v", e)
	}
	remove := func() { _ = ipcCtl(ops.Msg, id, unix.IPC_RMID, nil) }
	defer func() {
		if err != nil {
			remove()
		}
	}()
	var ds statBuf
	if e := ipcCtl(ops.Msg, id, unix.IPC_STAT, &ds); e != 0 {
		return nil, nil, fmt.Errorf("IPC_STAT: %v", e)
	}
	(*msqid64DS)(unsafe.Pointer(&ds.ds)).qbytes = 64
	if e := ipcCtl(ops.Msg, id, unix.IPC_SET, &ds); e != 0 {
		return nil, nil, fmt.Errorf("IPC_SET qbytes 64: %v", e)
	}
	var msg [4]uint64
	msg[0] = 1
	send := func(size uintptr, flags uintptr) unix.Errno {
		_, _, e := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&msg[0])), size, flags, 0, 0)
		return e
	}
	for range 8 {
		if e := send(8, unix.IPC_NOWAIT); e != 0 {
			return nil, nil, fmt.Errorf("filling the queue: %v", e)
		}
	}
	nsFD, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the worker's namespace: %w", err)
	}
	defer unix.Close(nsFD)
	tids := make(chan int, n)
	for range n {
		worker.GoLocked(func() {
			if _, _, e := unix.RawSyscall(unix.SYS_SETNS, uintptr(nsFD), unix.CLONE_NEWIPC, 0); e != 0 {
				tids <- -int(e)
				return
			}
			tids <- unix.Gettid()
			var m [4]uint64
			m[0] = 2
			for {
				_, _, e := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&m[0])), 16, 0, 0, 0)
				if e != unix.EINTR { // EIDRM at teardown
					return
				}
			}
		})
	}
	var senders []int
	var joinErr error
	for range n { // every thread answers, so none is left unaccounted for
		tid := <-tids
		if tid < 0 {
			joinErr = fmt.Errorf("a sender thread could not join the namespace: %v", unix.Errno(-tid))
			continue
		}
		senders = append(senders, tid)
	}
	if joinErr != nil {
		return nil, nil, joinErr
	}
	if err := waitAsleep(senders, "do_msgsnd"); err != nil {
		return nil, nil, err
	}
	var buf [4]uint64
	part = func() error {
		for range ops.MsgRounds {
			if _, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), 8, 1, unix.IPC_NOWAIT, 0); e != 0 {
				return fmt.Errorf("msgrcv: %v", e)
			}
			if e := send(8, unix.IPC_NOWAIT); e != 0 {
				return fmt.Errorf("refill: %v", e)
			}
		}
		return nil
	}
	return part, remove, nil
}

// waitAsleep waits until every thread sleeps in the call (state S, wchan
// the function named): evidence, not a delay. Between two looks it waits
// from 10 µs, doubling up to 1 ms.
func waitAsleep(tids []int, wchanWant string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, tid := range tids {
		base := "/proc/self/task/" + strconv.Itoa(tid) + "/"
		for wait := 10 * time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
			stat, err1 := os.ReadFile(base + "stat")
			wchan, err2 := os.ReadFile(base + "wchan")
			if err1 != nil || err2 != nil {
				return fmt.Errorf("sender thread %d: %v %v", tid, err1, err2)
			}
			i := bytes.LastIndexByte(stat, ')')
			if i > 0 && i+2 < len(stat) && stat[i+2] == 'S' && string(bytes.TrimSpace(wchan)) == wchanWant {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("thread %d did not fall asleep in %s", tid, wchanWant)
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
func pingPong(n int) (func() error, func(), error) {
	if err := checkSleepers(n); err != nil {
		return nil, nil, err
	}
	qs := make([]int64, 2*n)
	remove := func() {
		for _, q := range qs {
			if q != 0 {
				_ = ipcCtl(ops.Msg, q, unix.IPC_RMID, nil)
			}
		}
	}
	for i := range qs {
		id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: ops.IPCPrivate, Mode: 0o600})
		if e != 0 {
			remove()
			return nil, nil, fmt.Errorf("msgget: %v", e)
		}
		qs[i] = id
	}
	nsFD, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("opening the worker's namespace: %w", err)
	}
	defer unix.Close(nsFD)
	joined := make(chan error, n)
	for i := range n {
		req, resp := qs[2*i], qs[2*i+1]
		worker.GoLocked(func() {
			if _, _, e := unix.RawSyscall(unix.SYS_SETNS, uintptr(nsFD), unix.CLONE_NEWIPC, 0); e != 0 {
				joined <- fmt.Errorf("a server thread could not join the namespace: %v", e)
				return
			}
			joined <- nil
			var m [2]uint64
			for {
				if e := msgCall(unix.SYS_MSGRCV, req, &m, 8); e != 0 {
					return // EIDRM at teardown
				}
				if e := msgCall(unix.SYS_MSGSND, resp, &m, 4); e != 0 {
					return
				}
			}
		})
	}
	var joinErr error
	for range n { // every thread answers; removing the queues ends those that joined
		if err := <-joined; err != nil {
			joinErr = err
		}
	}
	if joinErr != nil {
		remove()
		return nil, nil, joinErr
	}
	var m [2]uint64
	m[0], m[1] = 1, 0x676e6970 // mtype 1, "ping"
	part := func() error {
		for range ops.MsgRounds {
			for i := range n {
				if e := msgCall(unix.SYS_MSGSND, qs[2*i], &m, 4); e != 0 {
					return fmt.Errorf("msgsnd: %v", e)
				}
			}
			for i := range n {
				if e := msgCall(unix.SYS_MSGRCV, qs[2*i+1], &m, 8); e != 0 {
					return fmt.Errorf("msgrcv: %v", e)
				}
			}
		}
		return nil
	}
	return part, remove, nil
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
