package equiv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

func outcome(ids ...int64) ops.Outcome {
	var o ops.Outcome
	for _, id := range ids {
		r := ops.Result{ID: id}
		if id < 0 {
			r = ops.Result{Err: ops.EINVAL}
		}
		o.Results = append(o.Results, r)
	}
	return o
}

// allocators returns a script of three gets and a rmid of the first, and
// its outcomes on the legacy allocator (ids 0, 32769, -, 65536) and on the
// cyclic one (0, 1, -, 2), final states included.
func allocators(t *testing.T) (s []ops.Op, legacy, cyclic ops.Outcome) {
	t.Helper()
	s = opstest.Ops(t, `subsystem ids
h1 = get msg key=0x0 mode=0600
h2 = get msg key=0x0 mode=0600
rmid msg h1
h3 = get msg key=0x0 mode=0600
`)
	legacy, cyclic = outcome(0, 32769, 0, 65536), outcome(0, 1, 0, 2)
	legacy.Snapshot.IDs[ops.Msg].Objects = []ops.Object{{ID: 32769, Mode: 0o600}, {ID: 65536, Mode: 0o600}}
	cyclic.Snapshot.IDs[ops.Msg].Objects = []ops.Object{{ID: 1, Mode: 0o600}, {ID: 2, Mode: 0o600}}
	return s, legacy, cyclic
}

func TestRelations(t *testing.T) {
	s, a, b := allocators(t)
	d := Compare(Exact, s, a, b)
	require.NotNil(t, d)
	require.Equal(t, 1, d.Step)
	require.Nil(t, Compare(IDsRenamed, s, a, b))

	// Not a renaming: B gives the same id to two live objects.
	bad := outcome(0, 1, 0, 1)
	bad.Snapshot = b.Snapshot
	require.NotNil(t, Compare(IDsRenamed, s, a, bad))

	// A removed object's id may come back for a new object on one side only.
	reuse := outcome(0, 1, 0, 0)
	reuse.Snapshot.IDs[ops.Msg].Objects = []ops.Object{{ID: 0, Mode: 0o600}, {ID: 1, Mode: 0o600}}
	require.Nil(t, Compare(IDsRenamed, s, a, reuse))

	// Errors and final states still have to agree.
	errB := outcome(0, -1, 0, 2)
	require.NotNil(t, Compare(IDsRenamed, s, a, errB))
	other := outcome(0, 1, 0, 2)
	other.Snapshot.IDs[ops.Msg].Objects = []ops.Object{{ID: 1, Mode: 0o644}, {ID: 2, Mode: 0o600}}
	d = Compare(IDsRenamed, s, a, other)
	require.NotNil(t, d)
	require.Equal(t, -1, d.Step)
}

// A segment removed while attached lives on (SHM_DEST) and keeps its ids:
// the renaming still relates them in later listings, and a new object that
// reuses one of its ids after it is gone replaces the pair.
func TestRenamingOutlivesRmidWhileAttached(t *testing.T) {
	s := opstest.Ops(t, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=1
h2 = get shm key=0x0 mode=0600 size=1
a1 = shmat shm h2
rmid shm h2 task=t1
list shm
`)
	list := func(ids ...int64) ops.Result {
		r := ops.Result{}
		for _, id := range ids {
			r.List = append(r.List, ops.Entry{ID: id})
		}
		return r
	}
	a := ops.Outcome{Results: []ops.Result{{ID: 0}, {ID: 32769}, {}, {}, list(0, 32769)}}
	b := ops.Outcome{Results: []ops.Result{{ID: 0}, {ID: 1}, {}, {}, list(0, 1)}}
	require.Nil(t, Compare(IDsRenamed, s, a, b))
	b.Results[4] = list(0, 2)
	require.NotNil(t, Compare(IDsRenamed, s, a, b), "a listing with another object is still a divergence")
}

// A Comparer fed the steps one by one, in any pieces, decides as Compare:
// the renaming carries over from step to step, the first divergence stays
// the answer, and the final states compare in the groups of the
// subsystems the steps used.
func TestComparerStepByStep(t *testing.T) {
	s, a, b := allocators(t)
	// A VMA group no step of an ids script uses is not compared.
	b.Snapshot.VMA.Brk = 4096
	for _, rel := range Relations {
		c := NewComparer(rel)
		var d *Divergence
		for i, op := range s {
			if d = c.Step(op, a.Results[i], b.Results[i]); d != nil {
				break
			}
		}
		if d == nil {
			d = c.Final(a.Snapshot, b.Snapshot)
		}
		require.Equal(t, Compare(rel, s, a, b), d, rel)
		if d != nil {
			require.Same(t, d, c.Step(s[0], a.Results[0], a.Results[0]), "the first divergence stays")
			require.Same(t, d, c.Final(a.Snapshot, a.Snapshot))
		}
	}
	require.Nil(t, Compare(IDsRenamed, s, a, b))
}
