//go:build linux && amd64

package kernel

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Each Model's worker claims a window of its own in this process, so two
// Models attach at the same window page without meeting, and each shows
// only its own VMAs there.
func TestShmWindowsOfTwoModels(t *testing.T) {
	a, b := newModel(t), newModel(t)
	for _, m := range []*Model{a, b} {
		runScripts(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=8192 -> id=0
a1 = shmat shm h1 at=w:0 -> at=w:0
write shm a1 val=9 -> ok
`)
	}
	require.NotEqual(t, a.n.win, b.n.win)
	for _, m := range []*Model{a, b} {
		s := snapshot(t, m)
		require.Equal(t, []ops.Attachment{{Att: 1, Task: ops.TaskPID(0, 0), ID: 0, At: 1, Pages: 2}}, s.Shm.Attachments)
	}
}

// What a script leaves in the windows (pieces of an attachment a remap
// split, in t0 and in a task) is gone at the next Reset: the same
// attachments succeed again without remap, and the pages around them are
// empty.
func TestShmWindowEmptyAfterReset(t *testing.T) {
	m := newModel(t)
	script := `subsystem shm
h1 = get shm key=0x0 mode=0600 size=12288 -> id=0
a1 = shmat shm h1 at=w:0 -> at=w:0
a2 = shmat shm h1 at=w:0 task=t1 -> at=w:0
a3 = shmat shm h1 at=w:1 remap -> at=w:1
a4 = shmat shm h1 rdonly at=w:1 remap task=t1 -> at=w:1
read shm w:4 -> fault
read shm w:4 task=t1 -> fault
write shm w:3 val=1 -> ok
write shm w:3 val=1 task=t1 -> fault
shmat shm h1 at=w:31 -> EINVAL
shmat shm h1 at=w:31 task=t1 -> EINVAL
`
	for range 3 {
		runScripts(t, m, script)
	}
	s := snapshot(t, m)
	require.Len(t, s.Shm.Attachments, 4)
}

// The Go task catches a fault as the C server does.
func TestShmTouchByGoTask(t *testing.T) {
	t.Setenv(EnvTasks, "go")
	m := newModel(t)
	runScripts(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=4096 -> id=0
a1 = shmat shm h1 rdonly at=w:5 task=t1 -> at=w:5
write shm a1 val=3 task=t1 -> fault
read shm a1 task=t1 -> val=0
read shm w:6 task=t1 -> fault
shmdt shm a1 task=t1 -> ok
`)
	self, err := os.Executable()
	require.NoError(t, err)
	exes := taskExes(t, m)
	require.NotEmpty(t, exes)
	for _, exe := range exes {
		require.Equal(t, self, exe)
	}
}

// A Reset releases every task side by side (tasks.releaseAll): the
// requests of each task are written at once and answered in order. After
// it, no task process maps a segment any more, whether it attached in its
// window, at an address the kernel chose, or both, and each is still the
// same process (it was released, not killed).
func TestResetDetachesEveryTaskAtOnce(t *testing.T) {
	m := newModel(t)
	runScripts(t, m, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=4096 -> id=0
h2 = get shm key=0x0 mode=0600 size=8192 -> id=1
a1 = shmat shm h1 task=t1
a2 = shmat shm h2 task=t1
a3 = shmat shm h1 at=w:2 task=t1 -> at=w:2
a4 = shmat shm h1 task=t2
a5 = shmat shm h2 task=t2
a6 = shmat shm h2 task=t2
a7 = shmat shm h2 at=w:0 task=t3 -> at=w:0
`)
	before := modelTasks(m)
	require.Len(t, before, 3)
	sysv := func() int {
		n := 0
		for _, pid := range before {
			b, err := os.ReadFile("/proc/" + itoa(int64(pid)) + "/maps")
			require.NoError(t, err)
			n += strings.Count(string(b), "/SYSV")
		}
		return n
	}
	require.Equal(t, 7, sysv()) // one mapping per attachment
	require.NoError(t, m.Reset(ops.Config{}))
	require.Equal(t, 0, sysv())
	require.ElementsMatch(t, before, modelTasks(m))
}
