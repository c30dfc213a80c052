package ipcns_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
)

// run applies each line of script (operations in their canonical text) to
// a fresh model of each kind and returns the results' text, one per line,
// the same on both, and the final snapshot's namespaces group.
func run(t *testing.T, script string) ([]string, string) {
	t.Helper()
	var first []string
	var firstNS string
	for name, table := range map[string]func() ipcns.Table{
		"naive":     func() ipcns.Table { return &naive.Slots{} },
		"optimized": func() ipcns.Table { return optimized.NewIDR() },
	} {
		m := ipcns.New(table, ipcns.Cyclic)
		require.NoError(t, m.Reset(ops.Config{}))
		h := ops.Handles{}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
			op, err := ops.ParseOp(strings.TrimSpace(line))
			require.NoError(t, err, line)
			r, err := m.Apply(h.Resolve(op))
			require.NoError(t, err, line)
			h.Record(op, r)
			got = append(got, ops.FormatResult(op, r))
		}
		snap, err := m.Snapshot()
		require.NoError(t, err)
		ns := ""
		for _, g := range ops.SnapshotGroups(snap) {
			if g.Name == "namespaces" {
				ns = g.Text
			}
		}
		if first == nil {
			first, firstNS = got, ns
			continue
		}
		require.Equal(t, first, got, name)
		require.Equal(t, firstNS, ns, name)
	}
	return first, firstNS
}

func TestUnshareGivesFreshIDsKeysAndLimits(t *testing.T) {
	got, ns := run(t, `
		h1 = get msg key=0x10 creat mode=0666
		limit msg 1
		unshare task=t1
		get msg key=0x10 mode=0666 task=t1
		h2 = get msg key=0x10 creat mode=0666 task=t1
		get msg key=0x11 creat mode=0666 task=t1
		get msg key=0x12 creat mode=0666 task=t2
	`)
	require.Equal(t, []string{"id=0", "ok", "ok", "ENOENT", "id=0", "id=1", "ENOSPC"}, got)
	require.Contains(t, ns, "ns1 tasks=t1\n")
	require.Contains(t, ns, "limit=32000 next_id=-1 max_idx=1 objects=2\n", "the new namespace's msgmni is a fresh one's")
}

func TestSetnsRunsExitSemButKeepsCreatedSegments(t *testing.T) {
	got, ns := run(t, `
		unshare task=t1
		h1 = get sem key=0x20 creat mode=0666 size=1 task=t1
		semop sem h1 0:+2:nowait:undo task=t1
		setns ns=t1 task=t2
		semctl sem h1 getval num=0 task=t2
		rmid_forced shm 1
		h2 = get shm key=0x0 creat mode=0666 size=4096 task=t3
		setns ns=t1 task=t3
		setns ns=t0 task=t1
		semctl sem h1 getval num=0 task=t2
		stat shm h2
		exit task=t3
		stat shm h2
	`)
	require.Equal(t, []string{"ok", "id=0", "ok", "ok", "ret=2", "ok", "id=0", "ok", "ok", "ret=0", got[10], "ok", "EINVAL"}, got)
	require.NotEqual(t, "EINVAL", got[10], "setns does not run exit_shm: the segment lives until t3 exits")
	require.Contains(t, ns, "ns1 tasks=t2\n")
}

func TestUnshareOrphansAndAttachmentsStay(t *testing.T) {
	got, ns := run(t, `
		rmid_forced shm 1
		h1 = get shm key=0x0 creat mode=0666 size=4096 task=t1
		h2 = get shm key=0x0 creat mode=0666 size=4096 task=t1
		a1 = shmat shm h2 task=t1
		unshare task=t1
		stat shm h1
		shmctl shm h2 stat
		shmdt shm a1 task=t1
		stat shm h2
	`)
	require.Equal(t, "EINVAL", got[5], "unshare runs exit_shm: an unattached segment goes with shm_rmid_forced")
	require.NotEqual(t, "EINVAL", got[6], "an attached one stays")
	require.Equal(t, "ok", got[7], "shmdt from the other namespace")
	require.Equal(t, "EINVAL", got[8], "the last detach destroys the orphan in its own namespace")
	require.Contains(t, ns, "ns1 tasks=t1\n")
}

func TestForkedChildStartsInItsParentsNamespace(t *testing.T) {
	got, ns := run(t, `
		unshare task=t1
		h1 = get msg key=0x30 creat mode=0666 task=t1
		fork_task child=t2 task=t1
		get msg key=0x30 mode=0666 task=t2
		exit task=t2
		get msg key=0x30 mode=0666 task=t2
	`)
	require.Equal(t, []string{"ok", "id=0", "ok", "id=0", "ok", "ENOENT"}, got)
	require.Contains(t, ns, "ns1 tasks=t1\n")
}
