package semq

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// TestStructuresAgree is the differential property: random scripts by up to
// five tasks on arrays of 1..4 semaphores run on PerSemaphore and on Scan,
// and every result, completion, value, sempid, count, otime, undo entry and
// semadj must be equal after every step. Now and then one side continues on
// a Clone, and the array it left must not change any more.
func TestStructuresAgree(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("LegacyCount=%v", legacy), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				nsems := drawNsems(t)
				a := newModelRunner(nsems, Options{Structure: PerSemaphore, LegacyCount: legacy})
				b := newModelRunner(nsems, Options{Structure: Scan, LegacyCount: legacy})
				var left []*Array // arrays a side left for its clone
				var leftObs []observation
				var log []string
				n := rapid.IntRange(1, 80).Draw(t, "steps")
				for range n {
					if rapid.IntRange(0, 15).Draw(t, "clone?") == 0 {
						side := rapid.SampledFrom([]*modelRunner{a, b}).Draw(t, "side")
						left, leftObs = append(left, side.a), append(leftObs, observeArray(side.a))
						side.a = side.a.Clone()
					}
					st := drawStep(t, nsems, a.observe().Pending, true)
					ra, rb := apply(a, st), apply(b, st)
					log = append(log, fmt.Sprintf("%v -> %v", st, ra))
					if ra.String() != rb.String() {
						t.Fatalf("results differ at the last step:\n%s\nScan: %v", strings.Join(log, "\n"), rb)
					}
					compareModels(t, a, b, log)
					checkPerSem(t, a.a)
					if st.kind == stepRmid {
						break
					}
				}
				for i, arr := range left {
					if got := fmt.Sprint(observeArray(arr)); got != fmt.Sprint(leftObs[i]) {
						t.Fatalf("an array changed after it was cloned: %s, was %v", got, leftObs[i])
					}
				}
			})
		})
	}
}

// compareModels fails if anything observable differs between a and b.
func compareModels(t *rapid.T, a, b *modelRunner, log []string) {
	oa, ob := fmt.Sprintf("%+v", a.observe()), fmt.Sprintf("%+v", b.observe())
	if oa != ob {
		t.Fatalf("states differ:\n%s\nPerSemaphore: %s\nScan:         %s", strings.Join(log, "\n"), oa, ob)
	}
	for task := range ops.NumTasks {
		p := a.pid(task)
		ua, ub := undoString(a.a, p), undoString(b.a, p)
		if ua != ub {
			t.Fatalf("undo entries of t%d differ:\n%s\nPerSemaphore: %s\nScan:         %s", task, strings.Join(log, "\n"), ua, ub)
		}
	}
	if a.a.Ctime() != b.a.Ctime() || a.a.Removed() != b.a.Removed() {
		t.Fatalf("ctime or removal differ:\n%s", strings.Join(log, "\n"))
	}
}

func undoString(a *Array, p ops.PID) string {
	if !a.HasUndo(p) {
		return "none"
	}
	adj := make([]int, a.Nsems())
	for n := range adj {
		adj[n] = a.Semadj(p, n)
	}
	return fmt.Sprint(adj)
}

// checkPerSem checks the invariants of the PerSemaphore structure between
// operations: complexCount counts the complex operations, which are all on
// the global queues; without complex operations the global alter queue is
// empty (unmerged), with them every per-semaphore alter queue is (merged);
// every pending operation is on exactly one list, the right one; and with
// the SUS count every pending operation counts exactly once.
func checkPerSem(t *rapid.T, a *Array) {
	p, isPerSem := a.q.(*perSem)
	if !isPerSem {
		return
	}
	complexOps, onLists := 0, 0
	for _, w := range a.byTask {
		if w.complex() {
			complexOps++
		}
	}
	check := func(l *wlist, want func(*waiter) bool, what string) {
		for w := l.head; w != nil; w = w.next {
			onLists++
			if w.on != l || !want(w) || a.byTask[w.task] != w {
				t.Fatalf("t%d is on %s wrongly", w.task, what)
			}
		}
	}
	for k := range p.alter {
		check(&p.alter[k], func(w *waiter) bool {
			return p.complexCount == 0 && !w.complex() && w.alter && w.sops[0].Num == k
		}, fmt.Sprintf("alter[%d]", k))
		check(&p.cnst[k], func(w *waiter) bool { return !w.complex() && !w.alter && w.sops[0].Num == k },
			fmt.Sprintf("const[%d]", k))
	}
	check(&p.gAlter, func(w *waiter) bool { return p.complexCount > 0 && w.alter }, "the global alter queue")
	check(&p.gConst, func(w *waiter) bool { return w.complex() && !w.alter }, "the global const queue")
	if complexOps != p.complexCount || onLists != len(a.byTask) {
		t.Fatalf("complexCount %d for %d complex ops; %d ops on lists for %d pending", p.complexCount, complexOps, onLists, len(a.byTask))
	}
	if a.opt.LegacyCount {
		return
	}
	total := 0
	for n := range a.Nsems() {
		total += a.GetNcnt(n) + a.GetZcnt(n)
	}
	if total != len(a.byTask) {
		t.Fatalf("GETNCNT+GETZCNT over all semaphores is %d for %d sleepers", total, len(a.byTask))
	}
}
