//go:build linux && amd64

package kernel

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// nsModel is a kernel model whose tasks are the C task server, which
// unshare and setns need; it skips where there is none.
func nsModel(t *testing.T) *Model {
	t.Helper()
	t.Setenv(EnvTasks, "")
	if _, err := task.Server(); err != nil {
		t.Skipf("unshare and setns need the C task server, not built here: %v", err)
	}
	return newModel(t)
}

// namespacesText is the namespaces group of s's canonical text.
func namespacesText(s ops.Snapshot) string {
	for _, g := range ops.SnapshotGroups(s) {
		if g.Name == "namespaces" {
			return g.Text
		}
	}
	return ""
}

// Ids, keys and *_next_id are per namespace: a task that unshares sees
// none of the script's objects, gets ids from 0 again and keys of its own;
// one that enters its namespace sees them; the script's namespace keeps
// its own, and its next_id stays where t0 wrote it.
func TestNamespaceIDsAndKeys(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x5 creat mode=0600 -> id=0
next_id msg 100 -> ok
unshare task=t1 -> ok
h2 = get msg key=0x5 mode=0600 task=t1 -> ENOENT
h3 = get msg key=0x0 mode=0600 task=t1 -> id=0
h4 = get msg key=0x5 creat mode=0640 task=t1 -> id=1
setns task=t2 ns=t1 -> ok
h5 = get msg key=0x5 mode=0600 task=t2 -> id=1
h6 = get msg key=0x7 creat mode=0600 task=t2 -> id=2
h7 = get msg key=0x7 mode=0600 -> ENOENT
h8 = get msg key=0x6 creat mode=0600 task=t3 -> id=100
`)
	s := snapshot(t, m)
	require.Len(t, s.IDs[ops.Msg].Objects, 2, "the script's namespace: h1 and h8")
	require.Equal(t, int64(-1), s.IDs[ops.Msg].NextID, "t3's get took next_id 100 in the script's namespace")
	require.Len(t, s.Namespaces, 1)
	other := s.Namespaces[0]
	require.Equal(t, uint16(1<<1|1<<2), other.Tasks)
	var keys []int32
	for _, o := range other.IDs[ops.Msg].Objects {
		keys = append(keys, o.Key)
	}
	require.Equal(t, []int32{0, 5, 7}, keys)
	require.Equal(t, int64(-1), other.IDs[ops.Msg].NextID)
	require.Equal(t, s.IDs[ops.Msg].Limit, other.IDs[ops.Msg].Limit, "a fresh namespace's msgmni")
	require.Len(t, other.Queues, 3)
	require.Contains(t, namespacesText(s), "ns1 tasks=t1,t2\n")

	// The next script starts every task in its own namespace again.
	runScript(t, m, `subsystem msg
h1 = get msg key=0x5 creat mode=0600 -> id=0
h2 = get msg key=0x5 mode=0600 task=t1 -> id=0
h3 = get msg key=0x5 mode=0600 task=t2 -> id=0
`)
	require.Nil(t, snapshot(t, m).Namespaces)
}

// A msgmni written by t0 is the script's namespace's only: another
// namespace keeps a fresh one's limit and ids.
func TestNamespaceLimits(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem msg
limit msg 1 -> ok
h1 = get msg key=0x0 mode=0600 -> id=0
h2 = get msg key=0x0 mode=0600 -> ENOSPC
unshare task=t1 -> ok
h3 = get msg key=0x0 mode=0600 task=t1 -> id=0
h4 = get msg key=0x0 mode=0600 task=t1 -> id=1
`)
	s := snapshot(t, m)
	require.Equal(t, int64(1), s.IDs[ops.Msg].Limit)
	require.Len(t, s.Namespaces, 1)
	require.Greater(t, s.Namespaces[0].IDs[ops.Msg].Limit, int64(1))
	require.Equal(t, int64(1), s.Namespaces[0].IDs[ops.Msg].MaxIdx)
}

// unshare and setns both run exit_sem: the task's adjustments are applied
// in the namespace it leaves, which may complete a sleeping semop; setns
// does it even into the namespace the task is already in.
func TestNamespaceExitSem(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem sem
h1 = get sem key=0x0 mode=0600 size=1 -> id=0
semctl sem h1 setval num=0 val=2 -> ok
semop sem h1 0:-2:undo task=t1 -> ok
semop sem h1 0:-1 task=t2 -> blocked
unshare task=t1 -> ok ; t2 ok
semctl sem h1 getall -> [1]
semctl sem h1 getpid num=0 -> pid=t2
semop sem h1 0:-1:undo task=t3 -> ok
semop sem h1 0:-1 task=t4 -> blocked
setns task=t3 ns=t3 -> ok ; t4 ok
semctl sem h1 getall -> [0]
semop sem h1 0:+1:undo task=t5 -> ok
setns task=t5 ns=t1 -> ok
semctl sem h1 getall -> [0]
`)
	s := snapshot(t, m)
	require.Len(t, s.Namespaces, 1)
	require.Equal(t, uint16(1<<1|1<<5), s.Namespaces[0].Tasks)
	require.Empty(t, s.Namespaces[0].Sems)
}

// unshare orphans the segments the task created (exit_shm), destroying
// under shm_rmid_forced those nothing attaches; setns does not: the task
// stays their creator, and its exit orphans them later.
func TestNamespaceExitShm(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem shm
rmid_forced shm 1 -> ok
h1 = get shm key=0x0 mode=0600 size=4096 task=t1 -> id=0
h2 = get shm key=0x0 mode=0600 size=4096 task=t1 -> id=1
a1 = shmat shm h2 task=t1 -> ok
unshare task=t1 -> ok
shmctl shm h1 stat -> EINVAL
shmctl shm h2 stat -> {0x0 0 600 4096 t1 t1 1 0 0 0 0 * 0 * 0 0}
h3 = get shm key=0x0 mode=0600 size=4096 task=t2 -> id=2
setns task=t2 ns=t1 -> ok
shmctl shm h3 stat -> {0x0 0 600 4096 t2 0 0 0 0 0 0 0 0 * 0 0}
exit task=t2 -> ok
shmctl shm h3 stat -> EINVAL
`)
	s := snapshot(t, m)
	require.Len(t, s.Shm.Attachments, 1, "t1's attachment stays mapped across the switch")
	require.Equal(t, int64(1), s.Shm.Attachments[0].ID)
	require.Equal(t, int64(1), s.Shm.Tot)
	require.Len(t, s.Namespaces, 1)
	require.Equal(t, int64(0), s.Namespaces[0].ShmTot)
	require.Equal(t, int64(0), s.Namespaces[0].RmidForced, "a fresh namespace's shm_rmid_forced")
}

// An attachment outlives its task's switch: shmdt from the other
// namespace detaches it and the segment's namespace counts one mapping
// less; a segment attached in the new namespace is that namespace's.
func TestNamespaceAttachmentsAcrossSwitch(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=4096 -> id=0
a1 = shmat shm h1 task=t1 -> ok
a2 = shmat shm h1 task=t2 -> ok
unshare task=t1 -> ok
shmctl shm h1 stat -> {0x0 0 600 4096 t0 t2 2 0 0 0 0 * 0 * 0 0}
shmdt shm a1 task=t1 -> ok
shmctl shm h1 stat -> {0x0 0 600 4096 t0 t1 1 0 0 0 0 * * * 0 0}
h2 = get shm key=0x0 mode=0600 size=8192 task=t1 -> id=0
a3 = shmat shm h2 task=t1 -> ok
`)
	s := snapshot(t, m)
	require.Equal(t, []ops.Attachment{
		{Att: 3, Task: ops.TaskPID(1, 0), ID: 0, NS: 1},
		{Att: 2, Task: ops.TaskPID(2, 0), ID: 0},
	}, s.Shm.Attachments, "each attachment names its segment's namespace")
	require.Len(t, s.Namespaces, 1)
	other := s.Namespaces[0]
	require.Equal(t, 1, other.Seq)
	require.Equal(t, int64(2), other.ShmTot)
	require.Len(t, other.Rows[ops.Shm], 1)
	require.Equal(t, int64(1), other.Rows[ops.Shm][0].Nattch)
	require.Equal(t, ops.TaskPID(1, 0), other.Rows[ops.Shm][0].Cpid)
	require.Equal(t, int64(1), s.Rows[ops.Shm][0].Nattch, "t2's attachment of h1 in the script's namespace")
}

// A sleeping task's call is on an object of its own namespace: a queue of
// the script's namespace with the same id shows no sleeper.
func TestNamespaceSleepers(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 -> id=0
unshare task=t1 -> ok
h2 = get msg key=0x0 mode=0600 task=t1 -> id=0
msgrcv msg h2 size=8 type=0 task=t1 -> blocked
setns task=t2 ns=t1 -> ok
msgsnd msg h1 type=1 size=1 fill=0 task=t3 -> ok
`)
	s := snapshot(t, m)
	require.Len(t, s.Queues, 1)
	require.Empty(t, s.Queues[0].Receivers)
	require.Len(t, s.Queues[0].Msgs, 1)
	require.Len(t, s.Namespaces, 1)
	require.Equal(t, []uint8{1}, s.Namespaces[0].Queues[0].Receivers)
	// The next script: t1 is idle in the script's namespace, where t2
	// sends it a message.
	rs := runScript(t, m, `subsystem msg
h1 = get msg key=0x0 mode=0600 task=t2 -> id=0
msgsnd msg h1 type=1 size=1 fill=0 task=t2 -> ok
msgrcv msg h1 size=8 type=0 task=t1
`)
	require.Equal(t, ops.OK, rs[2].Err)
	require.Equal(t, int64(1), rs[2].Msg.Type)
}

// The namespaces are in the order unshare made them, whatever the task
// numbers; a namespace nobody is in any more is not shown, and one made
// later with its inode number comes after the others. A forked child
// starts in its parent's namespace; an exited task's next incarnation in
// the script's. setns to a task that has not run does not start it: its
// slot stays free for a fork.
func TestNamespaceOrderForkAndExit(t *testing.T) {
	m := nsModel(t)
	runScript(t, m, `subsystem msg
h1 = get msg key=0x1 creat mode=0600 -> id=0
unshare task=t3 -> ok
unshare task=t2 -> ok
fork_task task=t2 child=t4 -> ok
h2 = get msg key=0x2 creat mode=0600 task=t4 -> id=0
h3 = get msg key=0x2 mode=0600 task=t2 -> id=0
setns task=t5 ns=t6 -> ok
fork_task task=t2 child=t6 -> ok
h4 = get msg key=0x1 mode=0600 task=t5 -> id=0
`)
	s := snapshot(t, m)
	require.Len(t, s.Namespaces, 2)
	require.Equal(t, uint16(1<<3), s.Namespaces[0].Tasks)
	require.Equal(t, uint16(1<<2|1<<4|1<<6), s.Namespaces[1].Tasks)
	apply(t, m, ops.Op{Kind: ops.KindExit, Task: 3})
	apply(t, m, ops.Op{Kind: ops.KindUnshare, Task: 1})
	s = snapshot(t, m)
	require.Len(t, s.Namespaces, 2)
	require.Equal(t, uint16(1<<2|1<<4|1<<6), s.Namespaces[0].Tasks)
	require.Equal(t, uint16(1<<1), s.Namespaces[1].Tasks)
	r := apply(t, m, ops.Op{Kind: ops.KindGet, Type: ops.Msg, Key: 1, Mode: 0o600, Task: 3})
	require.Equal(t, ops.OK, r.Err, "t3's next incarnation is in the script's namespace")
	require.Equal(t, []int{2, 3}, []int{s.Namespaces[0].Seq, s.Namespaces[1].Seq}, "by the unshare that made each")
	require.True(t, strings.HasPrefix(namespacesText(s), "namespaces=2\nns2 tasks=t2,t4,t6\n"), namespacesText(s))
}

// The Go task refuses unshare and setns: its threads share one undo list,
// which their exit_sem leaves unapplied.
func TestGoTaskRefusesNamespaces(t *testing.T) {
	t.Setenv(EnvTasks, "go")
	m := newModel(t)
	require.NoError(t, m.Reset(ops.Config{}))
	_, err := m.Apply(ops.Op{Kind: ops.KindUnshare, Task: 1})
	require.ErrorIs(t, err, task.ErrGoTaskNamespaces)
	_, err = m.Apply(ops.Op{Kind: ops.KindSetns, Task: 1})
	require.ErrorIs(t, err, task.ErrGoTaskNamespaces)
}

// BenchmarkSnapshotNamespaces is the snapshot of a script whose tasks
// stayed in the script's namespace (but for a setns into it: every task's
// namespace is looked up), and of one with one and two other namespaces:
// each is read on a thread of its own, its sysctls from their files.
func BenchmarkSnapshotNamespaces(b *testing.B) {
	for _, others := range []int{0, 1, 2} {
		b.Run(strconv.Itoa(others)+"-other", func(b *testing.B) {
			b.Setenv(EnvTasks, "")
			if _, err := task.Server(); err != nil {
				b.Skipf("unshare and setns need the C task server, not built here: %v", err)
			}
			m := newModel(b)
			require.NoError(b, m.Reset(ops.Config{}))
			apply(b, m, ops.Op{Kind: ops.KindSetns, Task: 1})
			for i := range others {
				apply(b, m, ops.Op{Kind: ops.KindUnshare, Task: uint8(2 + i)})
				for _, typ := range ops.IPCTypes {
					apply(b, m, ops.Op{Kind: ops.KindGet, Type: typ, Key: ops.IPCPrivate, Mode: 0o600, Size: 1, Task: uint8(2 + i)})
				}
			}
			for b.Loop() {
				s, err := m.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Namespaces) != others {
					b.Fatalf("%d namespaces", len(s.Namespaces))
				}
			}
		})
	}
}
