package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/msg"
)

// reached is the outcome of a script whose one operation reached pcs.
func reached(pcs ...uint64) [2]ops.Outcome {
	return [2]ops.Outcome{{Observed: []ops.Observation{{PCs: pcs}}}, {}}
}

// A guided source keeps the scripts that reach a program counter, or a
// step from one to another, that no script before reached, and draws
// from what it kept: two sources told the same draw the same scripts.
func TestGuidedKeepsWhatReachesNewCode(t *testing.T) {
	told := [][2]ops.Outcome{
		reached(0xffffffff81000010, 0xffffffff81000020), // new: kept
		reached(0xffffffff81000010, 0xffffffff81000020), // nothing new
		reached(0xffffffff81000020, 0xffffffff81000010), // a new step: kept
		{},                          // no side completed it
		reached(0xffffffff81000030), // new: kept
	}
	run := func() ([][]ops.Op, *int) {
		g := msg.Subsystem.Guided(equiv.Exact)
		var scripts [][]ops.Op
		var kept []int
		for i := range 40 {
			s := g.Next(uint64(i))
			require.NotEmpty(t, s)
			scripts = append(scripts, s)
			if i < len(told) {
				g.Feedback(s, told[i])
				kept = append(kept, g.Kept())
			}
		}
		require.Equal(t, []int{1, 1, 2, 2, 3}, kept)
		n := g.Reached()
		return scripts, &n
	}
	a, na := run()
	b, nb := run()
	require.Equal(t, a, b, "the same calls draw the same scripts")
	require.Equal(t, 8, *na, "3 program counters and 5 steps (an operation's first counter is a step from its start)")
	require.Equal(t, *na, *nb)
}

// Without program counters nothing is kept, and every script is drawn
// fresh from its seed's bytes.
func TestGuidedWithoutCoverageDrawsFresh(t *testing.T) {
	g := msg.Subsystem.Guided(equiv.Exact)
	for i := range 20 {
		g.Feedback(g.Next(uint64(i)), [2]ops.Outcome{})
	}
	require.Zero(t, g.Kept())
	require.Zero(t, g.Reached())
	require.Equal(t, msg.Subsystem.Guided(equiv.Exact).Next(7), g.Next(7))
}
