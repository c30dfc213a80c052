package semq

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

var structures = []Structure{PerSemaphore, Scan}

func pidOf(task int) ops.PID { return ops.TaskPID(task, 0) }

func sleep(t *testing.T, a *Array, task int, sops ...Sop) {
	t.Helper()
	err, blocked, done := a.Semop(pidOf(task), task, sops)
	require.Equal(t, ops.OK, err)
	require.True(t, blocked)
	require.Empty(t, done)
}

// Calls the caller should not make are refused without any change.
func TestSemopRefusals(t *testing.T) {
	eachStructure(t, 2, func(t *testing.T, a *Array) {
		sleep(t, a, 1, s(0, -1))
		before := a.Evaluations()
		for _, tc := range []struct {
			task int
			sops []Sop
			want ops.Errno
		}{
			{2, nil, ops.EINVAL},
			{2, []Sop{un(s(2, 1))}, efbig},
			{2, []Sop{s(0, 1), s(65535, 1)}, efbig},
			{1, []Sop{s(0, 1)}, ops.EBUSY},
		} {
			err, blocked, done := a.Semop(pidOf(tc.task), tc.task, tc.sops)
			require.Equal(t, tc.want, err, "%v", tc.sops)
			require.False(t, blocked)
			require.Empty(t, done)
		}
		require.Equal(t, before, a.Evaluations())
		require.Equal(t, []int{0, 0}, a.GetAll())
		require.False(t, a.HasUndo(pidOf(2)))
		require.Equal(t, []Completion{c(1, ops.EIDRM)}, a.Rmid())
		err, _, _ := a.Semop(pidOf(2), 2, []Sop{s(0, 1)})
		require.Equal(t, ops.EIDRM, err)
		a.EnsureUndo(pidOf(2))
		require.False(t, a.HasUndo(pidOf(2)))
		require.Nil(t, a.SetVal(pidOf(2), 0, 1))
		require.Nil(t, a.Rmid())
		require.True(t, a.Removed())
	})
}

func TestInterruptAndTimeout(t *testing.T) {
	eachStructure(t, 1, func(t *testing.T, a *Array) {
		_, ok := a.Interrupt(1)
		require.False(t, ok)
		sleep(t, a, 1, s(0, -1))
		sleep(t, a, 2, s(0, 0), s(0, -1))
		require.True(t, a.Pending(1))
		got, ok := a.Timeout(1)
		require.True(t, ok)
		require.Equal(t, c(1, ops.EAGAIN), got)
		got, ok = a.Interrupt(2)
		require.True(t, ok)
		require.Equal(t, c(2, ops.EINTR), got)
		require.Empty(t, a.PendingTasks())
		require.False(t, a.Otime())
	})
}

// Exit without an undo entry does nothing, not even otime.
func TestExitWithoutEntry(t *testing.T) {
	for _, st := range structures {
		a := NewArray(1, Options{Structure: st})
		require.Nil(t, a.Exit(pidOf(1)))
		require.False(t, a.Otime())
		require.Zero(t, a.Evaluations())
	}
}

// The documented case the kernel never reaches: process P exits while an
// operation of P (another task of it) sleeps. The operation stays; when it
// completes, its SEM_UNDO adjustment starts a new entry for P.
func TestExitWithAPendingOpOfTheSameProcess(t *testing.T) {
	eachStructure(t, 1, func(t *testing.T, a *Array) {
		p := pidOf(1)
		err, blocked, _ := a.Semop(p, 1, []Sop{un(s(0, -1))})
		require.Equal(t, ops.OK, err)
		require.True(t, blocked)
		require.True(t, a.HasUndo(p))
		require.Empty(t, a.Exit(p))
		require.False(t, a.HasUndo(p))
		require.True(t, a.Otime())
		require.True(t, a.Pending(1))
		err, _, done := a.Semop(pidOf(0), 0, []Sop{s(0, 1)})
		require.Equal(t, ops.OK, err)
		require.Equal(t, []Completion{c(1, ops.OK)}, done)
		require.True(t, a.HasUndo(p))
		require.Equal(t, 1, a.Semadj(p, 0))
	})
}

// evals runs f and returns the evaluations it took.
func evals(a *Array, f func()) int64 {
	before := a.Evaluations()
	f()
	return a.Evaluations() - before
}

// PerSemaphore evaluates exactly what the kernel evaluates.
func TestPerSemaphoreEvaluations(t *testing.T) {
	op := func(a *Array, task int, sops ...Sop) func() {
		return func() { a.Semop(pidOf(task), task, sops) }
	}
	t.Run("per-semaphore walk stops when the value is 0", func(t *testing.T) {
		a := NewArray(1, Options{})
		for task := 1; task <= 3; task++ {
			sleep(t, a, task, s(0, -1))
		}
		// the caller, then t1; t2 and t3 are not looked at
		require.EqualValues(t, 2, evals(a, op(a, 0, s(0, 1))))
	})
	t.Run("an error completion does not restart the global walk", func(t *testing.T) {
		a := NewArray(2, Options{})
		a.SetVal(pidOf(0), 1, SemVMX)
		sleep(t, a, 1, s(0, -2), s(1, -1))
		sleep(t, a, 2, s(0, -1), s(1, 1))
		var done []Completion
		n := evals(a, func() { _, _, done = a.Semop(pidOf(0), 0, []Sop{s(0, 1)}) })
		require.Equal(t, []Completion{c(2, ops.ERANGE)}, done)
		require.EqualValues(t, 3, n) // the caller, t1, t2
	})
	t.Run("a success restarts the global walk", func(t *testing.T) {
		a := NewArray(2, Options{})
		sleep(t, a, 1, s(0, -2), s(1, -1))
		sleep(t, a, 2, s(0, -1))
		// the caller, t1 (blocks), t2 (succeeds), t1 again
		require.EqualValues(t, 4, evals(a, op(a, 0, s(0, 1))))
	})
	t.Run("an all-zero semop looks at no queue", func(t *testing.T) {
		a := NewArray(2, Options{})
		sleep(t, a, 1, s(0, -1))
		sleep(t, a, 2, s(1, 0), s(0, -1))
		require.EqualValues(t, 1, evals(a, op(a, 0, s(1, 0))))
	})
	t.Run("decrements wake nobody in per-semaphore mode", func(t *testing.T) {
		a := NewArray(2, Options{})
		a.SetAll(pidOf(0), []int{5, 5})
		sleep(t, a, 1, s(0, -9))
		require.EqualValues(t, 1, evals(a, op(a, 0, s(0, -1))))
	})
}

// LegacyCount counts as 3.10-3.15 did; the default as 3.16 and later.
func TestLegacyCount(t *testing.T) {
	for _, st := range structures {
		t.Run(st.String(), func(t *testing.T) {
			build := func(legacy bool) *Array {
				a := NewArray(2, Options{Structure: st, LegacyCount: legacy})
				a.SetVal(pidOf(0), 1, 1)
				sleep(t, a, 1, s(0, -1), s(1, -1))            // blocked at s0
				sleep(t, a, 2, s(1, 0), s(0, 1))              // alter op blocked at a zero sop
				sleep(t, a, 3, s(0, -1), s(0, -1))            // the same sem twice
				sleep(t, a, 4, s(0, -1), nw(s(1, -1)))        // IPC_NOWAIT sops do not count
				sleep(t, a, 5, s(0, 0), s(1, 0), nw(s(1, 0))) // const op
				return a
			}
			counts := func(a *Array) [4]int {
				return [4]int{a.GetNcnt(0), a.GetNcnt(1), a.GetZcnt(0), a.GetZcnt(1)}
			}
			require.Equal(t, [4]int{3, 0, 0, 2}, counts(build(false)))
			require.Equal(t, [4]int{4, 1, 1, 1}, counts(build(true)))
		})
	}
}

// A clone continues exactly like the original, and neither affects the other.
func TestClone(t *testing.T) {
	eachStructure(t, 2, func(t *testing.T, a *Array) {
		sleep(t, a, 1, s(0, -1), s(1, -1))
		sleep(t, a, 2, un(s(0, -1)))
		sleep(t, a, 3, s(1, 0), s(0, -1))
		a.EnsureUndo(pidOf(4))
		b := a.Clone()
		require.Equal(t, observeArray(a), observeArray(b))
		before := observeArray(a)
		err, _, done := b.Semop(pidOf(0), 0, []Sop{s(0, 2), s(1, 1)})
		require.Equal(t, ops.OK, err)
		require.Equal(t, []Completion{c(1, ops.OK), c(2, ops.OK)}, done)
		require.Equal(t, before, observeArray(a))
		require.Equal(t, 0, a.Semadj(pidOf(2), 0))
		require.Equal(t, 1, b.Semadj(pidOf(2), 0))
		err, _, done2 := a.Semop(pidOf(0), 0, []Sop{s(0, 2), s(1, 1)})
		require.Equal(t, ops.OK, err)
		require.Equal(t, done, done2)
		require.Equal(t, observeArray(a), observeArray(b))
	})
}

// eachStructure runs f in a subtest per structure of the queues, on a
// fresh array of nsems semaphores of that structure.
func eachStructure(t *testing.T, nsems int, f func(t *testing.T, a *Array)) {
	t.Helper()
	for _, st := range structures {
		t.Run(st.String(), func(t *testing.T) { f(t, NewArray(nsems, Options{Structure: st})) })
	}
}
