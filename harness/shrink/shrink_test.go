package shrink

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func parse(t *testing.T, text string) []ops.Op {
	t.Helper()
	sc, err := ops.ParseString(text)
	require.NoError(t, err)
	return sc.Ops()
}

func TestRenumber(t *testing.T) {
	in := parse(t, `h4 = get shm key=0x0 mode=0600 size=1
h7 = get msg key=0x0 mode=0600
a3 = shmat shm h4
shmdt shm a9
a8 = shmat shm h4 task=t1
shmdt shm a3
stat msg h7
rmid shm h2
`)
	want := `h1 = get shm key=0x0 mode=0600 size=1
h2 = get msg key=0x0 mode=0600
a1 = shmat shm h1
shmdt shm a3
a2 = shmat shm h1 task=t1
shmdt shm a1
stat msg h2
rmid shm id=-1
`
	require.Equal(t, want, ops.Format(&ops.Script{Steps: ops.NewScript("", Renumber(in)).Steps}))
}

// The shrinker finds the smallest script a deterministic oracle still fails
// on, and asks in batches.
func TestMinimize(t *testing.T) {
	script := parse(t, `h1 = get msg key=0x1 creat mode=0644
h2 = get msg key=0x0 mode=0600
stat msg h2
list msg
h3 = get sem key=0x2 creat excl mode=0666 size=3
rmid msg h2
limit shm 7
h4 = get sem key=0x2 creat mode=0600 size=1 as=1000
list sem
`)
	// "Fails" while the script still gets sem key 0x2 twice, the second time
	// as a stranger.
	fails := func(s []ops.Op) bool {
		n, stranger := 0, false
		for _, op := range s {
			if op.Kind == ops.KindGet && op.Type == ops.Sem && op.Key == 2 {
				n++
				stranger = stranger || op.As != 0
			}
		}
		return n >= 2 && stranger
	}
	calls := 0
	oracle := func(_ context.Context, cands [][]ops.Op) ([]bool, error) {
		calls++
		out := make([]bool, len(cands))
		for i, c := range cands {
			out[i] = fails(c)
		}
		return out, nil
	}
	min, err := Minimize(context.Background(), script, oracle)
	require.NoError(t, err)
	require.Len(t, min, 2, ops.Format(ops.NewScript("", min)))
	require.True(t, fails(min))
	require.Less(t, calls, 40)
	again, err := Minimize(context.Background(), script, oracle)
	require.NoError(t, err)
	require.Equal(t, min, again, "the same failure shrinks to the same script")
}
