package runner_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// A divergence of two address spaces names what differs in them, so that
// one kernel merging where the other splits and one labelling [heap] where
// the other does not are two findings, and the same difference seen at a
// layout step or in the final state is one; an errno divergence keeps its
// classes.
func TestSignatureNamesWhatDiffersInALayout(t *testing.T) {
	script := opstest.Lines(t, "map h:0+1 r--", "layout")
	state := func(line string) ops.VMAState {
		s, err := ops.ParseVMAState("brk=0\n" + line + "\n")
		require.NoError(t, err)
		return s
	}
	plain, labelled := state("h:0-1 r--p anon mr,mw,me"), state("h:0-1 r--p anon [heap] mr,mw,me")
	out := func(s ops.VMAState) ops.Outcome {
		return ops.Outcome{Results: []ops.Result{{}, {Layout: s}}, Snapshot: ops.Snapshot{VMA: s}}
	}
	pair := [2]ops.Outcome{out(plain), out(labelled)}
	d := equiv.Compare(equiv.Exact, script, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "vma/space/heap-label", runner.Signature("vma", script, pair, d))

	final := script[:1]
	pair[0].Results, pair[1].Results = pair[0].Results[:1], pair[1].Results[:1]
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "vma/space/heap-label", runner.Signature("vma", final, pair, d))

	pair[1].Results = []ops.Result{{Err: ops.ENOMEM}}
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.Equal(t, "vma/map/ok-ENOMEM", runner.Signature("vma", final, pair, d))
}

// A listing that shows an object twice is signed by that, whether a list
// step shows it, the final listing differs, or the invariant it breaks
// caught it first; another listing difference names its column.
func TestSignatureNamesADuplicatedRow(t *testing.T) {
	row := func(id, nattch int64) ops.Row {
		return ops.Row{Key: 0, ID: id, Mode: 0o600, Size: 4096, Nattch: nattch}
	}
	once, twice := []ops.Row{row(0, 0)}, []ops.Row{row(0, 0), row(0, 0)}
	step := opstest.Lines(t, "h1 = get shm key=0x0 size=4096 mode=0600", "list shm rows")
	outcome := func(rows []ops.Row) ops.Outcome {
		var s ops.Snapshot
		s.Rows[ops.Shm] = rows
		return ops.Outcome{Results: []ops.Result{{ID: 0}, {Rows: rows}}, Snapshot: s}
	}
	pair := [2]ops.Outcome{outcome(once), outcome(twice)}
	d := equiv.Compare(equiv.Exact, step, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, 1, d.Step)
	require.Equal(t, "shm/listing/shm/dup-row", runner.Signature("shm", step, pair, d))

	final := step[:1]
	for i := range pair {
		pair[i].Results = pair[i].Results[:1]
	}
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "shm/listing/shm/dup-row", runner.Signature("shm", final, pair, d))

	// The invariant (nattch against the attachments, shm_tot against the
	// pages listed) breaks on B first: the signature still says dup-row.
	inv := &equiv.Divergence{Step: -1, Reason: "invariant: B: shm_tot 1, live segments have 2 pages"}
	require.Equal(t, "shm/listing/shm/dup-row", runner.Signature("shm", final, pair, inv))
	pair[1] = outcome([]ops.Row{row(0, 1)})
	pair[1].Results = pair[1].Results[:1]
	require.Equal(t, "shm/final/invariant", runner.Signature("shm", final, pair, inv))
	d = equiv.Compare(equiv.Exact, final, pair[0], pair[1])
	require.NotNil(t, d)
	require.Equal(t, "shm/listing/shm/nattch", runner.Signature("shm", final, pair, d))
}
