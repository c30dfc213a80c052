package semq

import (
	"fmt"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The sem-sleepers workload: n tasks asleep, task k on semaphore k (-1) of
// one array of n semaphores; each round a waker (task n) adds 1 to one
// semaphore, which completes exactly its sleeper, and the sleeper goes back
// to sleep.

var sleeperSizes = []int{16, 64, 256, 1024}

// sleepers builds the workload's array with every task asleep.
func sleepers(n int, st Structure) (*Array, error) {
	a := NewArray(n, Options{Structure: st})
	for k := range n {
		if err := sleepAgain(a, k); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func sleeperPID(task int) ops.PID { return ops.PID(task + 1) }

func sleepAgain(a *Array, k int) error {
	err, blocked, _ := a.Semop(sleeperPID(k), k, []Sop{{Num: k, Op: -1}})
	if err != ops.OK || !blocked {
		return fmt.Errorf("task %d: %v, blocked %v: want asleep", k, err, blocked)
	}
	return nil
}

// round wakes the sleeper on semaphore k and puts it back to sleep.
func round(a *Array, k int) error {
	waker := a.Nsems()
	err, blocked, done := a.Semop(sleeperPID(waker), waker, []Sop{{Num: k, Op: 1}})
	if err != ops.OK || blocked || len(done) != 1 || done[0] != (Completion{Task: k}) {
		return fmt.Errorf("waking s%d: %v, blocked %v, completed %v: want exactly t%d", k, err, blocked, done, k)
	}
	return sleepAgain(a, k)
}

// BenchmarkSleepers reports evals/round, the Evaluations of one round.
func BenchmarkSleepers(b *testing.B) {
	for _, st := range []Structure{Scan, PerSemaphore} {
		for _, n := range sleeperSizes {
			b.Run(fmt.Sprintf("%v/n=%d", st, n), func(b *testing.B) {
				a, err := sleepers(n, st)
				if err != nil {
					b.Fatal(err)
				}
				start := a.Evaluations()
				b.ResetTimer()
				for i := range b.N {
					if err := round(a, i%n); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(a.Evaluations()-start)/float64(b.N), "evals/round")
			})
		}
	}
}

// TestSleepersEvaluations pins the work per round: PerSemaphore evaluates
// the waker's op, the one sleeper, and the sleeper's op again (3), however
// many tasks sleep; Scan also scans its list of n-1 or n sleepers five
// times (the mode at each of the two calls, the alter queue of the
// semaphore, and the two wait-for-zero queues after the success).
func TestSleepersEvaluations(t *testing.T) {
	for _, n := range sleeperSizes {
		for _, st := range structures {
			a, err := sleepers(n, st)
			if err != nil {
				t.Fatal(err)
			}
			start := a.Evaluations()
			for i := range 2 * n {
				if err := round(a, (i*7)%n); err != nil {
					t.Fatal(err)
				}
			}
			perRound := float64(a.Evaluations()-start) / float64(2*n)
			want := 3.0
			if st == Scan {
				want = 3 + 2*float64(n) + 3*float64(n-1)
			}
			if perRound != want {
				t.Errorf("%v n=%d: %v evaluations a round, want %v", st, n, perRound, want)
			}
		}
	}
}
