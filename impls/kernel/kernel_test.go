//go:build linux && amd64

package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// newModel returns a fresh kernel model, or skips the test where this process
// may not create an IPC namespace.
func newModel(tb testing.TB) *Model {
	tb.Helper()
	m, err := New()
	if errors.Is(err, syscall.EPERM) {
		tb.Skipf("needs CAP_SYS_ADMIN to create a private IPC namespace: %v", err)
	}
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, m.Close()) })
	return m.(*Model)
}

func apply(tb testing.TB, m *Model, op ops.Op) ops.Result {
	tb.Helper()
	r, err := m.Apply(op)
	require.NoError(tb, err, ops.FormatOp(op))
	return r
}

func get(typ ops.IPCType, key int32, creat, excl bool, mode uint16) ops.Op {
	op := ops.Op{Kind: ops.KindGet, Type: typ, Key: key, Creat: creat, Excl: excl, Mode: mode}
	switch typ {
	case ops.Sem:
		op.Size = 1
	case ops.Shm:
		op.Size = 4096
	}
	return op
}

func private(typ ops.IPCType) ops.Op { return get(typ, ops.IPCPrivate, true, false, 0o600) }

func onID(kind ops.Kind, typ ops.IPCType, id int64) ops.Op {
	return ops.Op{Kind: kind, Type: typ, Obj: ops.Ref{ID: id}}
}

func rmid(typ ops.IPCType, id int64) ops.Op { return onID(ops.KindRmid, typ, id) }
func stat(typ ops.IPCType, id int64) ops.Op { return onID(ops.KindStat, typ, id) }

func create(tb testing.TB, m *Model, op ops.Op) int64 {
	tb.Helper()
	r := apply(tb, m, op)
	require.Equal(tb, ops.OK, r.Err, ops.FormatOp(op))
	return r.ID
}

func errOf(tb testing.TB, m *Model, op ops.Op) ops.Errno {
	tb.Helper()
	return apply(tb, m, op).Err
}

// onWorker runs f on the model's worker thread.
func onWorker(m *Model, f func()) { m.n.w.Run(f) }

// snapshot takes m's snapshot and checks it against one read entirely from
// the sysctl files: every <type>_next_id, msgmni, the 4th field of sem,
// shmmni.
func snapshot(tb testing.TB, m *Model) ops.Snapshot {
	tb.Helper()
	s, err := m.Snapshot()
	require.NoError(tb, err)
	var full ops.Snapshot
	var limits [3]int64
	m.n.w.Run(func() {
		full, err = m.n.snapshotReading([3]bool{true, true, true}, true)
		for _, typ := range ops.IPCTypes {
			data, rerr := os.ReadFile("/proc/sys/kernel/" + limitSysctl[typ])
			require.NoError(tb, rerr)
			f := strings.Fields(string(data))
			limits[typ], rerr = strconv.ParseInt(f[len(f)-1], 10, 64)
			require.NoError(tb, rerr)
		}
	})
	require.NoError(tb, err)
	require.Equal(tb, full, s, "a snapshot that skips untouched next_id files (and every sysctl file of another namespace) reads the same")
	for _, typ := range ops.IPCTypes {
		require.Equal(tb, limits[typ], s.IDs[typ].Limit, "%s: IPC_INFO and the sysctl file agree", typ)
	}
	return s
}

func TestCreateRemoveCycle(t *testing.T) {
	m := newModel(t)
	for _, typ := range ops.IPCTypes {
		var got []int64
		for range 66 {
			id := create(t, m, private(typ))
			got = append(got, id)
			require.Equal(t, ops.OK, errOf(t, m, rmid(typ, id)))
		}
		for i := range 64 {
			require.Equal(t, int64(i), got[i], "%s create %d", typ, i)
		}
		require.Equal(t, []int64{32768, 32769}, got[64:], "%s: after 64 cycles seq goes to 1 and idx back to 0", typ)
	}
}

func TestRestorePathNextID(t *testing.T) {
	m := newModel(t)
	require.Equal(t, int64(0), create(t, m, private(ops.Msg)))
	require.Equal(t, int64(1), create(t, m, private(ops.Msg)))

	nextID := func(typ ops.IPCType, v int64) ops.Errno {
		return errOf(t, m, ops.Op{Kind: ops.KindNextID, Type: typ, Value: v})
	}
	require.Equal(t, ops.OK, nextID(ops.Msg, 163940))
	snap := snapshot(t, m)
	require.Equal(t, int64(163940), snap.IDs[ops.Msg].NextID)
	require.Equal(t, int64(-1), snap.IDs[ops.Sem].NextID, "the allocators are per type")

	require.Equal(t, int64(163940), create(t, m, private(ops.Msg)))
	snap = snapshot(t, m)
	require.Equal(t, int64(-1), snap.IDs[ops.Msg].NextID, "consumed")
	require.Equal(t, int64(2), create(t, m, private(ops.Msg)), "normal allocation carries on from its cursor")

	// A busy idx takes the next free one with the requested seq.
	require.Equal(t, ops.OK, nextID(ops.Msg, ops.MakeID(9, 1)))
	require.Equal(t, ops.MakeID(9, 3), create(t, m, private(ops.Msg)))

	// Negative values are refused; a failed create does not consume next_id.
	require.Equal(t, ops.EINVAL, nextID(ops.Shm, -1))
	require.Equal(t, ops.OK, nextID(ops.Shm, 2147483647))
	bad := private(ops.Shm)
	bad.Size = 0
	require.Equal(t, ops.EINVAL, errOf(t, m, bad))
	require.Equal(t, int64(2147483647), create(t, m, private(ops.Shm)), "INT_MAX is a valid restored id")
}

func TestStaleAndNegativeIDs(t *testing.T) {
	m := newModel(t)
	for _, typ := range ops.IPCTypes {
		first := create(t, m, private(typ))
		require.Equal(t, ops.OK, errOf(t, m, rmid(typ, first)))
		require.Equal(t, ops.EINVAL, errOf(t, m, rmid(typ, first)), "%s: already removed", typ)
		for range 63 {
			require.Equal(t, ops.OK, errOf(t, m, rmid(typ, create(t, m, private(typ)))))
		}
		reused := create(t, m, private(typ))
		require.Equal(t, ops.MakeID(1, ops.IDIdx(first)), reused)
		require.Equal(t, ops.EINVAL, errOf(t, m, stat(typ, first)), "%s: stale id, slot reused with another seq", typ)
		require.Equal(t, ops.EINVAL, errOf(t, m, rmid(typ, first)))
		require.Equal(t, ops.OK, errOf(t, m, stat(typ, reused)))
		for _, id := range []int64{-1, -32768, -2147483648} {
			require.Equal(t, ops.EINVAL, errOf(t, m, stat(typ, id)), "%s stat id=%d", typ, id)
			require.Equal(t, ops.EINVAL, errOf(t, m, rmid(typ, id)), "%s rmid id=%d", typ, id)
		}
	}
}

// TestIntArguments pins down what the kernel does with values that do not
// fit its int parameters: ids and nsems are truncated to 32 bits, and the
// sysctls refuse anything above INT_MAX with EINVAL.
func TestIntArguments(t *testing.T) {
	m := newModel(t)
	for _, typ := range ops.IPCTypes {
		id := create(t, m, private(typ))
		require.Equal(t, int64(0), id)
		require.Equal(t, ops.OK, errOf(t, m, stat(typ, 1<<32)), "%s: id 1<<32 is id 0 to the kernel", typ)
		require.Equal(t, ops.EINVAL, errOf(t, m, stat(typ, 1<<31)), "%s: 1<<31 is negative as an int", typ)
		require.Equal(t, ops.EINVAL, errOf(t, m, ops.Op{Kind: ops.KindNextID, Type: typ, Value: 1 << 31}), typ)
		require.Equal(t, ops.EINVAL, errOf(t, m, ops.Op{Kind: ops.KindLimit, Type: typ, Value: 1 << 32}), "%s: EINVAL, even for semmni", typ)
	}
	sem := get(ops.Sem, 0x77, true, true, 0o600)
	sem.Size = 1<<32 + 2
	semID := create(t, m, sem)
	require.Equal(t, int64(2), apply(t, m, stat(ops.Sem, semID)).Obj.Size, "nsems is an int: 1<<32+2 creates 2 semaphores")
	sem.Size = -1
	require.Equal(t, ops.EINVAL, errOf(t, m, sem))
	snapshot(t, m)
}

func TestKeyHandling(t *testing.T) {
	m := newModel(t)
	for _, typ := range ops.IPCTypes {
		const key = 0x1234
		require.Equal(t, ops.ENOENT, errOf(t, m, get(typ, key, false, false, 0o600)), typ)
		require.Equal(t, ops.ENOENT, errOf(t, m, get(typ, key, false, true, 0o600)), "%s: IPC_EXCL alone", typ)
		id := create(t, m, get(typ, key, true, true, 0o600))
		require.Equal(t, ops.EEXIST, errOf(t, m, get(typ, key, true, true, 0o600)), typ)
		require.Equal(t, id, create(t, m, get(typ, key, true, false, 0o600)), "%s: IPC_CREAT finds it", typ)
		require.Equal(t, id, create(t, m, get(typ, key, false, false, 0)), "%s: lookup", typ)
		p1 := create(t, m, get(typ, ops.IPCPrivate, false, false, 0o600))
		p2 := create(t, m, get(typ, ops.IPCPrivate, true, true, 0o600))
		require.NotEqual(t, p1, p2, "%s: IPC_PRIVATE always creates", typ)
	}
	// Type checks on an existing key: size/nsems too big gives EINVAL.
	sem := get(ops.Sem, 0x55, true, false, 0o600)
	sem.Size = 3
	create(t, m, sem)
	sem.Size = 4
	require.Equal(t, ops.EINVAL, errOf(t, m, sem))
	sem.Size = 0
	require.Equal(t, ops.OK, errOf(t, m, sem), "nsems 0 is allowed on lookup")
}

func TestLimits(t *testing.T) {
	m := newModel(t)
	limit := func(typ ops.IPCType, v int64) ops.Errno {
		return errOf(t, m, ops.Op{Kind: ops.KindLimit, Type: typ, Value: v})
	}
	snap := snapshot(t, m)
	for _, typ := range ops.IPCTypes {
		require.Equal(t, ops.DefaultLimit(typ), snap.IDs[typ].Limit, typ)
		require.Equal(t, int64(-1), snap.IDs[typ].NextID, typ)
		require.Empty(t, snap.IDs[typ].Objects, typ)
	}

	for range 13 {
		create(t, m, private(ops.Msg))
	}
	require.Equal(t, ops.OK, limit(ops.Msg, 13))
	require.Equal(t, ops.ENOSPC, errOf(t, m, private(ops.Msg)))
	require.Equal(t, ops.OK, limit(ops.Msg, 0))
	require.Equal(t, ops.ENOSPC, errOf(t, m, private(ops.Msg)))
	require.Equal(t, ops.EINVAL, limit(ops.Msg, 32769))
	require.Equal(t, ops.OK, limit(ops.Msg, 32768))
	require.Equal(t, ops.EINVAL, limit(ops.Shm, 32769))
	require.Equal(t, ops.ERANGE, limit(ops.Sem, 32769))
	require.Equal(t, ops.ERANGE, limit(ops.Sem, -1))
	require.Equal(t, ops.OK, limit(ops.Sem, 2))
	require.Equal(t, ops.OK, limit(ops.Shm, 1))

	snap = snapshot(t, m)
	require.Equal(t, int64(32768), snap.IDs[ops.Msg].Limit)
	require.Equal(t, int64(2), snap.IDs[ops.Sem].Limit, "the failed writes kept the old value")
	require.Equal(t, int64(1), snap.IDs[ops.Shm].Limit)
	var semLine []byte
	onWorker(m, func() { semLine, _ = os.ReadFile("/proc/sys/kernel/sem") })
	require.Equal(t, "32000\t1024000000\t500\t2\n", string(semLine), "semmsl, semmns and semopm are kept")

	create(t, m, private(ops.Shm))
	require.Equal(t, ops.ENOSPC, errOf(t, m, private(ops.Shm)))
}

func TestPermissions(t *testing.T) {
	m := newModel(t)
	dumpable := processDumpable()
	as := func(op ops.Op, uid uint32) ops.Op { op.As = uid; return op }
	for _, typ := range ops.IPCTypes {
		id := create(t, m, get(typ, 0x600, true, true, 0o600))
		require.Equal(t, ops.EACCES, errOf(t, m, as(get(typ, 0x600, false, false, 0o600), 1000)), typ)
		require.Equal(t, ops.EACCES, errOf(t, m, as(get(typ, 0x600, true, false, 0o400), 1000)), typ)
		require.Equal(t, id, create(t, m, as(get(typ, 0x600, false, false, 0), 1000)), "%s: asking for no access is always granted", typ)
		require.Equal(t, ops.EACCES, errOf(t, m, as(stat(typ, id), 1000)), typ)
		require.Equal(t, ops.EPERM, errOf(t, m, as(rmid(typ, id), 1000)), typ)

		open := create(t, m, get(typ, 0x666, true, true, 0o666))
		require.Equal(t, open, create(t, m, as(get(typ, 0x666, false, false, 0o666), 1000)), typ)
		require.Equal(t, ops.EPERM, errOf(t, m, as(rmid(typ, open), 1000)), "%s: not the owner", typ)

		mine := create(t, m, as(get(typ, 0x1000, true, true, 0o640), 1000))
		r := apply(t, m, stat(typ, mine))
		require.Equal(t, uint32(1000), r.Obj.Owner, typ)
		require.Equal(t, uint16(0o640), r.Obj.Mode, typ)
		require.Equal(t, ops.OK, errOf(t, m, as(rmid(typ, mine), 1000)), "%s: the owner may remove", typ)
		require.Equal(t, ops.OK, errOf(t, m, rmid(typ, id)), "%s: root still may", typ)
	}
	// Sysctls refuse an unprivileged writer.
	require.Equal(t, ops.EACCES, errOf(t, m, as(ops.Op{Kind: ops.KindLimit, Type: ops.Msg, Value: 5}, 1000)))
	require.Equal(t, ops.EACCES, errOf(t, m, as(ops.Op{Kind: ops.KindNextID, Type: ops.Msg, Value: 5}, 1000)))
	require.Equal(t, ops.OK, errOf(t, m, as(ops.Op{Kind: ops.KindList, Type: ops.Msg}, 1000)))

	// The worker is itself again, capabilities included, and no other
	// thread ever changed.
	host := readStatus(t, "/proc/self/status")
	var worker map[string]string
	onWorker(m, func() { worker = readStatus(t, "/proc/thread-self/status") })
	for _, f := range []string{"Uid", "Gid", "Groups", "CapEff", "CapPrm"} {
		require.Equal(t, host[f], worker[f], f)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	require.NoError(t, err)
	for _, p := range tasks {
		st := readStatus(t, p)
		require.Equal(t, host["Uid"], st["Uid"], p)
		require.Equal(t, host["CapEff"], st["CapEff"], p)
	}
	require.Equal(t, dumpable, processDumpable(), "dumpable flag restored")
}

func TestDiscardedThreadIsReplaced(t *testing.T) {
	m := newModel(t)
	old := m.n.w
	create(t, m, private(ops.Msg))
	// Drop a capability from the worker's permitted set: no switch back
	// from another user can bring it back, so the check after an op run
	// as another user fails, as it would for credentials that cannot be
	// restored.
	var err error
	onWorker(m, func() { err = dropPermitted(unix.CAP_SYS_BOOT) })
	require.NoError(t, err)
	op := private(ops.Msg)
	op.As = 1000
	_, err = m.Apply(op)
	require.ErrorContains(t, err, "discarded")
	_, err = m.Apply(private(ops.Msg))
	require.ErrorContains(t, err, "Reset starts a new one")
	old.WaitExit()
	_, err = os.Stat(fmt.Sprintf("/proc/self/task/%d", old.Tid()))
	require.ErrorIs(t, err, os.ErrNotExist, "the discarded thread exited")

	require.NoError(t, m.Reset(ops.Config{}))
	require.Equal(t, int64(0), create(t, m, private(ops.Msg)), "a new thread in a new namespace")
	require.Equal(t, int64(1), create(t, m, op))
}

// dropPermitted drops capability c from the calling thread's permitted
// (and effective) set, for good.
func dropPermitted(c int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[c/32].Permitted &^= 1 << (c % 32)
	data[c/32].Effective &^= 1 << (c % 32)
	data[c/32].Inheritable &^= 1 << (c % 32)
	return unix.Capset(&hdr, &data[0])
}

func TestListingAndStat(t *testing.T) {
	m := newModel(t)
	list := func(typ ops.IPCType) []ops.Entry {
		r := apply(t, m, ops.Op{Kind: ops.KindList, Type: typ})
		require.Equal(t, ops.OK, r.Err)
		return r.List
	}
	require.Empty(t, list(ops.Msg))

	require.Equal(t, ops.OK, errOf(t, m, ops.Op{Kind: ops.KindNextID, Type: ops.Msg, Value: 100}))
	require.Equal(t, int64(100), create(t, m, get(ops.Msg, -559038737, true, false, 0o644)))
	require.Equal(t, ops.OK, errOf(t, m, ops.Op{Kind: ops.KindNextID, Type: ops.Msg, Value: ops.MakeID(3, 32767)}))
	require.Equal(t, ops.MakeID(3, 32767), create(t, m, private(ops.Msg)))
	for i := range 3 {
		require.Equal(t, int64(i), create(t, m, get(ops.Msg, int32(7+i), true, false, 0o600)))
	}
	require.Equal(t, []ops.Entry{{ID: 0, Key: 7}, {ID: 1, Key: 8}, {ID: 2, Key: 9}, {ID: 100, Key: -559038737}, {ID: ops.MakeID(3, 32767), Key: 0}}, list(ops.Msg),
		"ascending idx, not creation order; keys are signed")

	sem := get(ops.Sem, 0x1234, true, false, 0o666)
	sem.Size = 7
	semID := create(t, m, sem)
	shm := get(ops.Shm, 85, true, false, 0o640)
	shm.Size = 5000
	shmID := create(t, m, shm)
	require.Equal(t, ops.Object{Key: 0x1234, Mode: 0o666, Size: 7}, apply(t, m, stat(ops.Sem, semID)).Obj)
	require.Equal(t, ops.Object{Key: 85, Mode: 0o640, Size: 5000}, apply(t, m, stat(ops.Shm, shmID)).Obj)
	require.Equal(t, ops.Object{Key: -559038737, Mode: 0o644}, apply(t, m, stat(ops.Msg, 100)).Obj)

	snap := snapshot(t, m)
	require.Equal(t, []ops.Object{{ID: semID, Key: 0x1234, Mode: 0o666, Size: 7}}, snap.ObjectsOf(ops.Sem))
	require.Equal(t, []ops.Object{{ID: shmID, Key: 85, Mode: 0o640, Size: 5000}}, snap.ObjectsOf(ops.Shm))
	msgs := snap.ObjectsOf(ops.Msg)
	require.Len(t, msgs, 5)
	require.Equal(t, ops.Object{ID: 100, Key: -559038737, Mode: 0o644}, msgs[3])
	// A snapshot agrees with IPC_STAT on every object.
	for _, typ := range ops.IPCTypes {
		for _, o := range snap.ObjectsOf(typ) {
			st := apply(t, m, stat(typ, o.ID)).Obj
			st.ID = o.ID
			require.Equal(t, o, st)
		}
	}
}

func TestResetGivesFreshNamespace(t *testing.T) {
	m := newModel(t)
	var before, after string
	onWorker(m, func() { before, _ = os.Readlink("/proc/thread-self/ns/ipc") })
	for range 5 {
		create(t, m, private(ops.Msg))
	}
	require.Equal(t, ops.OK, errOf(t, m, ops.Op{Kind: ops.KindLimit, Type: ops.Shm, Value: 7}))
	require.Equal(t, ops.OK, errOf(t, m, ops.Op{Kind: ops.KindNextID, Type: ops.Sem, Value: 77}))
	dirty := snapshot(t, m)
	require.Equal(t, int64(77), dirty.IDs[ops.Sem].NextID)
	require.Equal(t, int64(7), dirty.IDs[ops.Shm].Limit)
	require.NoError(t, m.Reset(ops.Config{}))
	onWorker(m, func() { after, _ = os.Readlink("/proc/thread-self/ns/ipc") })
	require.NotEqual(t, before, after)

	snap := snapshot(t, m)
	for _, typ := range ops.IPCTypes {
		require.Equal(t, ops.TypeState{NextID: -1, Limit: ops.DefaultLimit(typ)}, snap.IDs[typ], typ)
	}
	require.Equal(t, int64(0), create(t, m, private(ops.Msg)), "ids restart at 0")

	err := m.Reset(ops.Config{Options: map[string]string{"alloc": "legacy", "x": "1"}})
	require.ErrorContains(t, err, "unknown option alloc=legacy")
}

func TestWorkerIsolation(t *testing.T) {
	m := newModel(t)
	host, err := os.Readlink("/proc/self/ns/ipc")
	require.NoError(t, err)
	var tid int
	var ns string
	onWorker(m, func() {
		tid = syscall.Gettid()
		ns, _ = os.Readlink("/proc/thread-self/ns/ipc")
	})
	require.NotEqual(t, host, ns, "the worker is in a namespace of its own")
	viaTask, err := os.Readlink(fmt.Sprintf("/proc/self/task/%d/ns/ipc", tid))
	require.NoError(t, err)
	require.Equal(t, ns, viaTask)

	// Make the runtime start more threads while the worker is busy, then
	// check every thread but the worker is in the host namespace.
	create(t, m, private(ops.Msg))
	done := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			syscall.Getpid()
			done <- struct{}{}
		}()
	}
	for range 4 {
		<-done
	}
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	require.Greater(t, len(tasks), 1)
	for _, e := range tasks {
		got, err := os.Readlink("/proc/self/task/" + e.Name() + "/ns/ipc")
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		require.NoError(t, err)
		if e.Name() == strconv.Itoa(tid) {
			require.Equal(t, ns, got)
		} else {
			require.Equal(t, host, got, "thread %s", e.Name())
		}
	}

	require.NoError(t, m.Close())
	// The thread ends just after its goroutine does; wait for it.
	require.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
		return errors.Is(err, os.ErrNotExist)
	}, 5*time.Second, time.Millisecond, "the worker thread exits on Close")
	_, err = m.Apply(private(ops.Msg))
	require.ErrorContains(t, err, "closed")
}

func TestRunMatchesApply(t *testing.T) {
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Key: 5, Creat: true, Mode: 0o600},
		{Kind: ops.KindGet, Type: ops.Msg, Key: 5, Mode: 0o600, As: 1000},
		{Kind: ops.KindNextID, Type: ops.Sem, Value: 163940},
		{Kind: ops.KindGet, Type: ops.Sem, Bind: 2, Key: 6, Creat: true, Mode: 0o640, Size: 3},
		{Kind: ops.KindStat, Type: ops.Sem, Obj: ops.Ref{Handle: 2}},
		{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: 1}},
		{Kind: ops.KindRmid, Type: ops.Shm, Obj: ops.Ref{Handle: 9}},
		{Kind: ops.KindLimit, Type: ops.Shm, Value: 3},
		{Kind: ops.KindList, Type: ops.Sem},
	}
	viaRun, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	viaApply, err := ops.Run(m, ops.Config{}, script)
	require.NoError(t, err)
	require.Equal(t, viaApply, viaRun)
	require.Equal(t, ops.EACCES, viaRun.Results[1].Err)
	require.Equal(t, int64(163940), viaRun.Results[3].ID)
	require.Equal(t, ops.EINVAL, viaRun.Results[6].Err)
	require.Equal(t, ops.EINVAL, viaRun.Results[7].Err, "an unbound handle is id -1")
	require.Equal(t, []ops.Entry{{ID: 163940, Key: 6}}, viaRun.Results[9].List)

	_, err = m.Run(ops.Config{Options: map[string]string{"alloc": "legacy"}}, script)
	require.ErrorContains(t, err, "unknown option alloc=legacy")

	// The kernel takes caps= only as what its process really has.
	has, err := hasCapSysResource()
	require.NoError(t, err)
	real, pretend := "none", ops.CapSysResource
	if has {
		real, pretend = pretend, real
	}
	_, err = m.Run(ops.Config{Options: map[string]string{ops.OptionCaps: real}}, script)
	require.NoError(t, err)
	_, err = m.Run(ops.Config{Options: map[string]string{ops.OptionCaps: pretend}}, script)
	require.ErrorContains(t, err, "cannot pretend")
}

// The kernel says which release it is, takes caps only, and follows
// nobody (it is not an ops.Follower: where woken tasks race, its way is
// the one the models follow).
func TestWhatTheKernelSaysOfItself(t *testing.T) {
	require.True(t, strings.HasPrefix(Release(), "Linux "), Release())
	require.Equal(t, "caps=none|sys_resource (only what the process has),"+
		"image=PATH (a vmlinux, bzImage or Debian .deb booted in QEMU, KVM where the CPU has it, else TCG),vm=NAME,"+
		"source=DIR (a kernel tree built for the guest and booted),base=|6.1|6.12,patches=DIR,cpus=N", Options.String())
	var m ops.Model = &Model{}
	_, follows := m.(ops.Follower)
	require.False(t, follows)
}

// TestMain checks that no test left anything in the host's IPC namespace.
func TestMain(m *testing.M) {
	before, err := hostIPCState()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	after, err := hostIPCState()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if after != before {
		fmt.Fprintf(os.Stderr, "host IPC namespace changed:\nbefore %s\nafter  %s\n", before, after)
		code = 1
	}
	os.Exit(code)
}

// hostIPCState summarizes the host namespace as seen from a thread that never
// left it: object counts and every IPC sysctl the model writes.
func hostIPCState() (string, error) {
	var b strings.Builder
	for _, typ := range ops.IPCTypes {
		data, err := os.ReadFile("/proc/sysvipc/" + typ.String())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%d ", typ, bytes.Count(data, []byte("\n"))-1)
	}
	for _, f := range []string{"msgmni", "shmmni", "sem", "msg_next_id", "sem_next_id", "shm_next_id"} {
		data, err := os.ReadFile("/proc/sys/kernel/" + f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s=%s ", f, strings.Join(strings.Fields(string(data)), "/"))
	}
	// The main thread never serves as a worker: it keeps the host
	// namespace and root's credentials.
	ns, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		return "", err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	uid, _, _ := strings.Cut(string(status[bytes.Index(status, []byte("Uid:")):]), "\n")
	fmt.Fprintf(&b, "main thread: %s %s", ns, uid)
	return b.String(), nil
}

func readStatus(tb testing.TB, path string) map[string]string {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		out[k] = strings.TrimSpace(v)
	}
	require.NoError(tb, sc.Err())
	return out
}

// A reset that cannot undo what the last script left (here: an attachment
// whose address shmdt refuses, what a kernel that reports a wrong shmat
// address leaves) does not fail the side: the worker thread, its
// namespace and its tasks are replaced, and the next script runs in a
// fresh namespace, through Run (one hand-over) as through Reset.
func TestResetThatCannotUndoReplacesTheWorker(t *testing.T) {
	m := newModel(t)
	script := []ops.Op{
		{Kind: ops.KindGet, Type: ops.Msg, Bind: 1, Key: ops.IPCPrivate, Creat: true, Mode: 0o600},
		{Kind: ops.KindList, Type: ops.Msg},
	}
	plant := func() {
		onWorker(m, func() {
			m.n.shm.attached = append(m.n.shm.attached, &kattach{task: 0, addr: notAttached})
			m.n.dirty = true
		})
	}
	first, err := m.Run(ops.Config{}, script)
	require.NoError(t, err)
	old := m.n.w

	plant()
	out, err := m.Run(ops.Config{}, script)
	require.NoError(t, err, "a reset that cannot undo is not the side's failure")
	require.Equal(t, first, out, "the script ran in a fresh namespace")
	require.Equal(t, 1, m.Replaced())
	require.NotSame(t, old, m.n.w, "a new worker thread")
	old.WaitExit()
	_, err = os.Stat(fmt.Sprintf("/proc/self/task/%d", old.Tid()))
	require.ErrorIs(t, err, os.ErrNotExist, "the old thread exited, its namespace with it")

	plant()
	require.NoError(t, m.Reset(ops.Config{}))
	require.Equal(t, 2, m.Replaced())
	require.Equal(t, int64(0), create(t, m, private(ops.Msg)), "a fresh namespace")
}
