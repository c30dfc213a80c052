package semq

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// scenario is a named script with its expected results, from ipc-spec §3
// and kernel-probe §4. Every scenario runs on both structures and, as root,
// on the kernel (kernel_linux_test.go), where each step is also compared
// with the model.
type scenario struct {
	name  string
	nsems int
	run   func(t *testing.T, r runner)
}

func s(num, op int) Sop { return Sop{Num: num, Op: op} }
func nw(o Sop) Sop      { o.NoWait = true; return o }
func un(o Sop) Sop      { o.Undo = true; return o }

// ok is a successful semop result that completed these sleepers.
func ok(done ...Completion) result { return result{Err: ops.OK, Done: done} }

var blocked = result{Blocked: true}

func fails(err ops.Errno) result { return result{Err: err} }

func c(task int, err ops.Errno) Completion { return Completion{Task: task, Err: err} }

// state checks values and, when given, GETNCNT and GETZCNT of every semaphore.
func state(t *testing.T, r runner, vals []int, ncnt, zcnt []int) {
	t.Helper()
	o := r.observe()
	require.Equal(t, vals, o.Vals, "values")
	if ncnt != nil {
		require.Equal(t, ncnt, o.Ncnt, "GETNCNT")
	}
	if zcnt != nil {
		require.Equal(t, zcnt, o.Zcnt, "GETZCNT")
	}
}

func pids(t *testing.T, r runner, want ...ops.PID) {
	t.Helper()
	require.Equal(t, want, r.observe().Pids, "GETPID")
}

func otime(t *testing.T, r runner, want bool) {
	t.Helper()
	require.Equal(t, want, r.observe().Otime, "sem_otime set")
}

// none is an empty list of completions, as runners return it.
var none []Completion

var scenarios = []scenario{
	{"C1_simple_waiters_complete_in_FIFO_order", 1, func(t *testing.T, r runner) {
		for task := 1; task <= 3; task++ {
			require.Equal(t, blocked, r.semop(task, s(0, -1)))
			state(t, r, []int{0}, []int{task}, []int{0})
		}
		for task := 1; task <= 3; task++ {
			require.Equal(t, ok(c(task, ops.OK)), r.semop(0, s(0, 1)))
		}
		state(t, r, []int{0}, []int{0}, []int{0})
		pids(t, r, r.pid(3))
		otime(t, r, true)
	}},
	{"C2_a_waiter_that_cannot_proceed_is_skipped", 1, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, s(0, -2)))
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		require.Equal(t, blocked, r.semop(3, s(0, -1)))
		require.Equal(t, ok(c(2, ops.OK)), r.semop(0, s(0, 1)))
		state(t, r, []int{0}, []int{2}, []int{0})
	}},
	{"C3_one_increment_completes_every_waiter_it_can", 1, func(t *testing.T, r runner) {
		for task := 1; task <= 3; task++ {
			require.Equal(t, blocked, r.semop(task, s(0, -1)))
		}
		require.Equal(t, ok(c(1, ops.OK), c(2, ops.OK), c(3, ops.OK)), r.semop(0, s(0, 3)))
		state(t, r, []int{0}, []int{0}, []int{0})
	}},
	{"no_starvation_protection_W1(-2)_W2(-1)", 1, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, s(0, -2)))
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		require.Equal(t, ok(c(2, ops.OK)), r.semop(0, s(0, 1)))
		require.Equal(t, ok(c(1, ops.OK)), r.semop(0, s(0, 2)))
		state(t, r, []int{0}, []int{0}, []int{0})
	}},
	{"complex_then_simple_GETNCNT_follows_the_restart", 2, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(1, -1)))
		state(t, r, []int{0, 0}, []int{1, 0}, nil)
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		state(t, r, []int{0, 0}, []int{2, 0}, nil)
		// C is evaluated first and blocks at s1; S completes; the walk
		// restarts and C, evaluated again, blocks at s0.
		require.Equal(t, ok(c(2, ops.OK)), r.semop(0, s(0, 1)))
		state(t, r, []int{0, 0}, []int{1, 0}, nil)
		require.Equal(t, ok(), r.semop(0, s(1, 1)))
		state(t, r, []int{0, 1}, []int{1, 0}, nil)
		require.Equal(t, ok(c(1, ops.OK)), r.semop(0, s(0, 1)))
		state(t, r, []int{0, 0}, []int{0, 0}, []int{0, 0})
	}},
	{"zero_waiters_are_served_before_the_alter_pass", 2, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 0, 1))
		require.Equal(t, blocked, r.semop(1, s(0, 0)))
		require.Equal(t, blocked, r.semop(2, s(1, -1), s(0, 1)))
		state(t, r, []int{1, 0}, []int{0, 1}, []int{1, 0})
		// t3 makes s0 zero: t1's wait completes before t2 raises s0 again.
		require.Equal(t, ok(c(1, ops.OK), c(2, ops.OK)), r.semop(3, s(0, -1), s(1, 1)))
		state(t, r, []int{1, 0}, []int{0, 0}, []int{0, 0})
		pids(t, r, r.pid(2), r.pid(2))
	}},
	{"IPC_NOWAIT_is_per_sop_and_a_sleeper_can_get_EAGAIN_later", 2, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, nw(s(0, 1)), s(1, -1)))
		state(t, r, []int{0, 0}, []int{0, 1}, nil)
		require.Equal(t, fails(ops.EAGAIN), r.semop(2, nw(s(1, -1))))
		require.Equal(t, blocked, r.semop(3, s(1, -1), nw(s(0, -2))))
		state(t, r, []int{0, 0}, []int{0, 2}, nil)
		require.Equal(t, ok(c(1, ops.OK)), r.semop(0, s(1, 1)))
		state(t, r, []int{1, 0}, []int{0, 1}, nil)
		// t3 gets past s1 now and blocks at its IPC_NOWAIT sop on s0.
		require.Equal(t, ok(c(3, ops.EAGAIN)), r.semop(0, s(1, 1)))
		state(t, r, []int{1, 1}, []int{0, 0}, []int{0, 0})
	}},
	{"sequential_cumulative_evaluation_with_rollback", 2, func(t *testing.T, r runner) {
		require.Equal(t, fails(ops.ERANGE), r.semop(1, s(1, 32767), s(1, 1)))
		state(t, r, []int{0, 0}, nil, nil)
		require.Equal(t, ok(), r.semop(1, s(0, 1), s(0, -1)))
		pids(t, r, r.pid(1), 0)
		require.Equal(t, blocked, r.semop(2, s(0, -1), s(0, 1)))
		require.Equal(t, blocked, r.semop(3, s(0, 1), s(0, 0)))
		require.Equal(t, blocked, r.semop(4, s(0, 2), s(1, -1)))
		state(t, r, []int{0, 0}, []int{1, 1}, []int{1, 0})
		// t4 succeeds, then (restart) t2; t3 still sees its own +1.
		require.Equal(t, ok(c(2, ops.OK), c(4, ops.OK)), r.semop(0, s(1, 1)))
		state(t, r, []int{2, 0}, []int{0, 0}, []int{1, 0})
		require.Equal(t, none, r.setval(0, 0, 0))
		state(t, r, []int{0, 0}, []int{0, 0}, []int{1, 0})
		require.Equal(t, []Completion{c(3, ops.EIDRM)}, r.rmid())
	}},
	{"ERANGE_for_a_value_above_32767", 1, func(t *testing.T, r runner) {
		require.Equal(t, ok(), r.semop(1, s(0, 32767)))
		require.Equal(t, fails(ops.ERANGE), r.semop(1, s(0, 1)))
		state(t, r, []int{32767}, nil, nil)
	}},
	{"ERANGE_for_semadj_-32769_and_32768", 1, func(t *testing.T, r runner) {
		require.Equal(t, ok(), r.semop(1, un(s(0, 32767))))
		require.Equal(t, ok(), r.semop(0, s(0, -32767)))
		require.Equal(t, ok(), r.semop(1, un(s(0, 1)))) // semadj -32768
		require.Equal(t, ok(), r.semop(0, s(0, -1)))
		require.Equal(t, fails(ops.ERANGE), r.semop(1, un(s(0, 1))))
		state(t, r, []int{0}, nil, nil)
		require.Equal(t, none, r.setval(0, 0, 32767)) // clears t1's semadj
		require.Equal(t, ok(), r.semop(2, un(s(0, -32767))))
		require.Equal(t, ok(), r.semop(0, s(0, 1)))
		require.Equal(t, fails(ops.ERANGE), r.semop(2, un(s(0, -1))))
		state(t, r, []int{1}, nil, nil)
		p2 := r.pid(2)
		require.Equal(t, none, r.exit(1))
		pids(t, r, r.pid(0))
		require.Equal(t, none, r.exit(2))
		state(t, r, []int{32767}, nil, nil) // 1 + 32767, clamped
		pids(t, r, p2)
	}},
	{"exit_applies_semadj_clamped_at_0", 1, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 0, 1))
		require.Equal(t, ok(), r.semop(1, un(s(0, 3))))
		require.Equal(t, ok(), r.semop(0, s(0, -4)))
		p1 := r.pid(1)
		require.Equal(t, none, r.exit(1))
		state(t, r, []int{0}, nil, nil)
		pids(t, r, p1)
	}},
	{"exit_applies_semadj_clamped_at_32767", 1, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 0, 5))
		require.Equal(t, ok(), r.semop(2, un(s(0, -2))))
		require.Equal(t, ok(), r.semop(0, s(0, 32764)))
		p2 := r.pid(2)
		require.Equal(t, none, r.exit(2))
		state(t, r, []int{32767}, nil, nil)
		pids(t, r, p2)
	}},
	{"exit_wakes_sleepers_and_sets_otime", 1, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 0, 1))
		require.Equal(t, ok(), r.semop(1, un(s(0, -1))))
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		require.Equal(t, []Completion{c(2, ops.OK)}, r.exit(1))
		state(t, r, []int{0}, []int{0}, nil)
		pids(t, r, r.pid(2))
	}},
	{"a_sleeper_completed_by_the_waker_keeps_its_undo", 1, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, un(s(0, -1))))
		require.Equal(t, ok(c(1, ops.OK)), r.semop(0, s(0, 2)))
		state(t, r, []int{1}, nil, nil)
		require.Equal(t, none, r.exit(1))
		state(t, r, []int{2}, nil, nil)
	}},
	{"SETVAL_and_SETALL_clear_semadj", 2, func(t *testing.T, r runner) {
		require.Equal(t, ok(), r.semop(1, un(s(0, 2)), un(s(1, 3))))
		require.Equal(t, none, r.setval(0, 0, 5))
		p1 := r.pid(1)
		require.Equal(t, none, r.exit(1))
		state(t, r, []int{5, 0}, nil, nil)
		pids(t, r, r.pid(0), p1)
		require.Equal(t, ok(), r.semop(2, un(s(0, -1))))
		require.Equal(t, none, r.setall(0, 1, 1))
		require.Equal(t, none, r.exit(2))
		state(t, r, []int{1, 1}, nil, nil)
		pids(t, r, r.pid(0), r.pid(0))
	}},
	{"otime_quirk_a_failed_SEM_UNDO_semop_sets_otime_at_exit", 1, func(t *testing.T, r runner) {
		require.Equal(t, none, r.exit(3)) // no undo entry: nothing
		otime(t, r, false)
		require.Equal(t, fails(ops.EAGAIN), r.semop(1, nw(un(s(0, -1)))))
		otime(t, r, false)
		require.Equal(t, none, r.exit(1))
		otime(t, r, true)
	}},
	{"otime_quirk_EFBIG_after_the_undo_entry", 1, func(t *testing.T, r runner) {
		r.ensureUndo(1)
		otime(t, r, false)
		require.Equal(t, none, r.exit(1))
		otime(t, r, true)
		pids(t, r, 0)
	}},
	{"an_all-zero_semop_sets_sempid_and_otime_only", 2, func(t *testing.T, r runner) {
		require.Equal(t, ok(), r.semop(1, s(1, 0)))
		otime(t, r, true)
		pids(t, r, 0, r.pid(1))
		state(t, r, []int{0, 0}, nil, nil)
	}},
	{"SETVAL_sets_otime_only_when_a_sleeper_succeeds", 1, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 0, 1))
		require.Equal(t, blocked, r.semop(1, s(0, -2)))
		otime(t, r, false)
		require.Equal(t, []Completion{c(1, ops.OK)}, r.setval(0, 0, 2))
		otime(t, r, true)
		pids(t, r, r.pid(1))
	}},
	{"restart_from_the_head_after_a_success_in_global_mode", 3, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(1, -1)))
		require.Equal(t, blocked, r.semop(2, s(1, 1), s(2, -1)))
		require.Equal(t, ok(c(1, ops.OK), c(2, ops.OK)), r.semop(0, s(0, 1), s(2, 1)))
		state(t, r, []int{0, 0, 0}, []int{0, 0, 0}, []int{0, 0, 0})
	}},
	{"global_mode_lasts_until_unlock_after_the_last_complex_op", 1, func(t *testing.T, r runner) {
		// t2 waits on the global queue behind the complex t1. When t1
		// completes, the queues unmerge only at the unlock: the walk
		// restarts on the global queue and completes t2 as well.
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(0, -1)))
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		require.Equal(t, ok(c(1, ops.OK), c(2, ops.OK)), r.semop(0, s(0, 3)))
		state(t, r, []int{0}, []int{0}, []int{0})
	}},
	{"GETZCNT_keeps_the_blocking_sop_until_re-evaluation", 2, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setall(0, 1, 1))
		require.Equal(t, blocked, r.semop(1, s(0, 0), s(1, 0)))
		state(t, r, []int{1, 1}, nil, []int{1, 0})
		require.Equal(t, ok(), r.semop(0, s(0, -1)))
		state(t, r, []int{0, 1}, nil, []int{0, 1})
		// s0 is 1 again, but nothing re-evaluates t1: it still counts on s1.
		require.Equal(t, ok(), r.semop(0, s(0, 1)))
		state(t, r, []int{1, 1}, nil, []int{0, 1})
		require.Equal(t, ok(), r.semop(0, s(1, -1)))
		state(t, r, []int{1, 0}, nil, []int{1, 0})
	}},
	{"a_complex_alter_op_blocked_at_a_zero_sop_counts_in_GETZCNT", 2, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 1, 1))
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(1, -1)))
		require.Equal(t, blocked, r.semop(2, s(1, 0), s(0, 1)))
		state(t, r, []int{0, 1}, []int{1, 0}, []int{0, 1})
	}},
	{"a_sleeper_completes_with_ERANGE", 2, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 1, 32767))
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(1, 1)))
		require.Equal(t, []Completion{c(1, ops.ERANGE)}, r.setval(0, 0, 1))
		state(t, r, []int{1, 32767}, []int{0, 0}, nil)
		otime(t, r, false)
	}},
	{"IPC_RMID_gives_every_sleeper_EIDRM", 2, func(t *testing.T, r runner) {
		require.Equal(t, none, r.setval(0, 1, 1))
		require.Equal(t, blocked, r.semop(1, s(0, -1)))
		require.Equal(t, blocked, r.semop(2, s(1, 0)))
		require.Equal(t, blocked, r.semop(3, s(0, -1), s(1, -1)))
		require.Equal(t, blocked, r.semop(4, s(0, 0), s(1, 0)))
		state(t, r, []int{0, 1}, []int{2, 0}, []int{0, 2})
		require.Equal(t, []Completion{c(1, ops.EIDRM), c(2, ops.EIDRM), c(3, ops.EIDRM), c(4, ops.EIDRM)}, r.rmid())
	}},
	{"a_signal_gives_EINTR_and_re-evaluates_nobody", 2, func(t *testing.T, r runner) {
		require.Equal(t, blocked, r.semop(1, s(0, -1)))
		require.Equal(t, blocked, r.semop(2, s(0, -1)))
		require.Equal(t, c(1, ops.EINTR), r.interrupt(1))
		state(t, r, []int{0, 0}, []int{1, 0}, nil)
		require.Equal(t, ok(c(2, ops.OK)), r.semop(0, s(0, 1)))
		// the last complex op leaves: the queues unmerge
		require.Equal(t, blocked, r.semop(1, s(0, -1), s(1, -1)))
		require.Equal(t, blocked, r.semop(2, s(1, -1)))
		require.Equal(t, c(1, ops.EINTR), r.interrupt(1))
		require.Equal(t, ok(c(2, ops.OK)), r.semop(0, s(1, 1)))
		state(t, r, []int{0, 0}, []int{0, 0}, []int{0, 0})
	}},
	{"wait_for_zero_then_increment_in_one_op_always_blocks_on_0", 1, func(t *testing.T, r runner) {
		require.Equal(t, ok(), r.semop(1, s(0, 0), s(0, 1)))
		require.Equal(t, none, r.setval(0, 0, 0))
		require.Equal(t, blocked, r.semop(2, s(0, 1), s(0, 0)))
		state(t, r, []int{0}, []int{0}, []int{1})
	}},
}

func TestScenarios(t *testing.T) {
	for _, st := range []Structure{PerSemaphore, Scan} {
		for _, sc := range scenarios {
			t.Run(st.String()+"/"+sc.name, func(t *testing.T) {
				sc.run(t, newModelRunner(sc.nsems, Options{Structure: st}))
			})
		}
	}
}
