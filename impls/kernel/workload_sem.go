//go:build linux && amd64

package kernel

import (
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// semSleepers builds the sem-sleepers workload on the real kernel: one
// array of n semaphores, all 0, and n sleeper processes (task processes,
// born in the worker's namespace), each asleep in semop(-1) on its own
// semaphore. The measured part is rounds rounds; round r gives semaphore
// r mod n a +1 (a semop by the worker), which completes exactly that
// semaphore's sleeper; the worker reads its answer, sends it the same
// semop again and waits until it is asleep again on it (GETNCNT 1, value
// 0: exact evidence, ipc-spec §3.7), so that every round finds all n
// asleep. Since 3.x the kernel keeps a pending list per semaphore, so a
// round's cost should not grow with n; the naive model scans every pending
// operation.
//
// The sleepers are processes, not threads of this Go process: a thread
// that wakes from a long syscall must win a P back from the Go scheduler
// first, and how long that takes grew with the number of sleeping threads
// (a fit of n^0.6 on a 2-CPU VM), which is the runtime's cost, not the
// kernel's.
//
// teardown removes the array (every sleeper returns EIDRM) and kills and
// reaps every sleeper. Every error path does the same, so no process is
// left behind.
func semSleepers(bin string, n, rounds int) (part func() error, teardown func(), err error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("sem-sleepers needs at least one sleeper, not %d", n)
	}
	if err := checkSleepers(n); err != nil {
		return nil, nil, err
	}
	// Room for n semaphores in this private namespace only.
	if e, err := writeProc("/proc/sys/kernel/sem", fmt.Sprintf("%d %d %d %d\n", max(n, ops.DefaultSemmsl), max(int64(n), ops.DefaultSemmns), ops.DefaultSemopm, ops.DefaultSemmni)); err != nil || e != 0 {
		return nil, nil, fmt.Errorf("raising kernel.sem for %d semaphores: %v %v", n, e, err)
	}
	id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Sem, Key: ops.IPCPrivate, Mode: 0o600, Size: int64(n)})
	if e != 0 {
		return nil, nil, fmt.Errorf("semget of %d semaphores: %v", n, e)
	}
	s := &sleepers{id: id, sops: make([][6]byte, n)}
	defer func() {
		if err != nil {
			s.teardown()
		}
	}()
	for i := range n {
		if err := s.start(bin, i); err != nil {
			return nil, nil, err
		}
	}
	for i := range n {
		if err := s.asleep(i); err != nil {
			return nil, nil, err
		}
	}
	return func() error { return s.rounds(rounds) }, s.teardown, nil
}

// sleepers are the processes of sem-sleepers, each asleep on its own
// semaphore of array id.
type sleepers struct {
	id    int64
	procs []*task.Proc
	// sops are each sleeper's request payload: the sembuf {sem_num i,
	// sem_op -1, sem_flg 0} of its semop(id, &sembuf, 1).
	sops [][6]byte
	next int // the semaphore the next round gives a +1
}

// start starts sleeper i and puts it to sleep.
func (s *sleepers) start(bin string, i int) error {
	p, err := task.StartProcess(0, bin)
	if err != nil {
		return fmt.Errorf("starting sleeper %d of %d: %w", i+1, len(s.sops), err)
	}
	s.procs = append(s.procs, p)
	binary.LittleEndian.PutUint16(s.sops[i][0:], uint16(i))
	binary.LittleEndian.PutUint16(s.sops[i][2:], uint16(0xffff)) // -1
	return s.sleep(i)
}

// sleep sends sleeper i its semop.
func (s *sleepers) sleep(i int) error {
	req := task.Req{Kind: task.KindCall, Nr: unix.SYS_SEMOP, Args: [6]uint64{uint64(s.id), 0, 1}, PtrArgs: 1 << 1}
	return s.procs[i].Start(&req, s.sops[i][:])
}

// count is a semctl count (GETNCNT, GETVAL) of semaphore num.
func (s *sleepers) count(num, cmd int) (int64, error) {
	r, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(s.id), uintptr(num), uintptr(cmd), 0, 0, 0)
	if e != 0 {
		return 0, fmt.Errorf("semctl(%d, %d, %d): %w", s.id, num, cmd, e)
	}
	return int64(r), nil
}

// asleep waits until semaphore num is 0 with one sleeper queued on it.
func (s *sleepers) asleep(num int) error {
	deadline := time.Now().Add(task.SettleTimeout())
	for i := 0; ; i++ {
		ncnt, err := s.count(num, semGetNcnt)
		if err != nil {
			return err
		}
		if ncnt == 1 {
			v, err := s.count(num, semGetVal)
			if err != nil || v == 0 {
				return err
			}
		}
		if i%1024 == 1023 && time.Now().After(deadline) {
			return fmt.Errorf("the sleeper on semaphore %d is not asleep again within %v", num, task.SettleTimeout())
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// rounds is the measured part: each round wakes the next sleeper with a
// +1, reads its answer and puts it to sleep again.
func (s *sleepers) rounds(rounds int) error {
	for range rounds {
		if err := s.round(s.next); err != nil {
			return err
		}
		s.next = (s.next + 1) % len(s.procs)
	}
	return nil
}

func (s *sleepers) round(next int) error {
	sop := [3]int16{int16(uint16(next)), 1, unix.IPC_NOWAIT}
	if _, _, e := unix.Syscall(unix.SYS_SEMOP, uintptr(s.id), uintptr(unsafe.Pointer(&sop[0])), 1); e != 0 {
		return fmt.Errorf("semop +1 on %d: %w", next, e)
	}
	p := s.procs[next]
	if ok, err := p.ReadyWithin(task.SettleTimeout()); err != nil || !ok {
		return fmt.Errorf("the sleeper on semaphore %d did not return within %v (%v)", next, task.SettleTimeout(), err)
	}
	resp, err := p.Collect(s.sops[next][:])
	if err != nil {
		return err
	}
	if resp.Errno != 0 {
		return fmt.Errorf("the sleeper on semaphore %d: semop: %w", next, unix.Errno(resp.Errno))
	}
	if err := s.sleep(next); err != nil {
		return err
	}
	return s.asleep(next)
}

// teardown removes the array (every sleeper returns EIDRM) and kills and
// reaps every sleeper.
func (s *sleepers) teardown() {
	_ = ipcCtl(ops.Sem, s.id, unix.IPC_RMID, nil)
	for _, p := range s.procs {
		p.Kill()
	}
	s.procs = nil
}

// semopDepth builds the semop-depth workload on the real kernel (seed 004
// of the cyclic-allocation patch): two arrays of one semaphore placed at
// idx 1 and idx k through sem_next_id, so that the ids' radix tree is as
// high as idx k needs. The measured part is rounds no-op semops (sem_op 0
// on a semaphore that is 0, IPC_NOWAIT) alternating between the two
// arrays; the wall time per semop is the lookup's cost at that depth plus
// a constant.
func semopDepth(k, rounds int) (func() error, error) {
	if k < 2 || k >= ops.IPCMNI {
		return nil, fmt.Errorf("semop-depth needs an idx in 2..%d, not %d", ops.IPCMNI-1, k)
	}
	var ids [2]int64
	for i, idx := range []int64{1, int64(k)} {
		if e, err := (&procfs{}).setNextID(ops.Sem, idx); err != nil || e != 0 {
			return nil, fmt.Errorf("sem_next_id %d: %v %v", idx, e, err)
		}
		id, e := ipcGet(ops.Op{Kind: ops.KindGet, Type: ops.Sem, Key: ops.IPCPrivate, Mode: 0o600, Size: 1})
		if e != 0 {
			return nil, fmt.Errorf("semget at idx %d: %v", idx, e)
		}
		if int64(ops.IDIdx(id)) != idx {
			return nil, fmt.Errorf("semget at idx %d gave id %d", idx, id)
		}
		ids[i] = id
	}
	sop := [3]int16{0, 0, unix.IPC_NOWAIT}
	return func() error {
		for i := range rounds {
			if _, _, e := unix.Syscall(unix.SYS_SEMOP, uintptr(ids[i&1]), uintptr(unsafe.Pointer(&sop[0])), 1); e != 0 {
				return fmt.Errorf("semop on %d: %w", ids[i&1], e)
			}
		}
		return nil
	}, nil
}
