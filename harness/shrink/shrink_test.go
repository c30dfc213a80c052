package shrink

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
)

func TestRenumber(t *testing.T) {
	in := opstest.Ops(t, `subsystem shm
h4 = get shm key=0x0 mode=0600 size=1
h7 = get msg key=0x0 mode=0600
h9 = get msg key=0x0 mode=0600
a3 = shmat shm h4 task=t3
a8 = shmat shm h4 task=t1
shmdt shm a3 task=t3
stat msg h7
rmid shm h9
`)
	// A removal can leave a reference to an object handle nothing binds.
	in = append(in[:2], in[3:]...)
	want := `subsystem shm
h1 = get shm key=0x0 mode=0600 size=1
h2 = get msg key=0x0 mode=0600
a1 = shmat shm h1 task=t1
a2 = shmat shm h1 task=t2
shmdt shm a1 task=t1
stat msg h2
rmid shm id=-1
`
	got := ops.Format(ops.NewScript("shm", Renumber(in)))
	require.Equal(t, want, got)
	_, err := ops.ParseString(got)
	require.NoError(t, err, "a renumbered script parses")
}

// A removal that would leave an attachment handle unbound is not tried: the
// script it would make has no text.
func TestRemovalsKeepHandlesBound(t *testing.T) {
	s := opstest.Ops(t, `subsystem shm
h1 = get shm key=0x0 mode=0600 size=1
a1 = shmat shm h1
shmdt shm a1
`)
	for _, c := range removals(s, 1) {
		require.True(t, boundBeforeUse(c))
	}
	require.Len(t, removals(s, 1), 2, "removing the shmat alone is left out")
}

// The shrinker finds the smallest script a deterministic oracle still fails
// on, lowers literal values, and asks in batches.
func TestMinimize(t *testing.T) {
	script := opstest.Ops(t, `subsystem ids
h1 = get msg key=0x1 creat mode=0644
h2 = get msg key=0x0 mode=0600
stat msg h2
list msg
h3 = get sem key=0x2 creat excl mode=0666 size=3
rmid msg h2
limit shm 7
h4 = get sem key=0x2 creat mode=0600 size=1 as=1000
churn msg 5000
list sem
`)
	// "Fails" while the script still gets sem key 0x2 twice, the second time
	// as a stranger, and churns at least 700 times.
	fails := func(s []ops.Op) bool {
		n, stranger, churn := 0, false, false
		for _, op := range s {
			if op.Kind == ops.KindGet && op.Type == ops.Sem && op.Key == 2 {
				n++
				stranger = stranger || op.As != 0
			}
			churn = churn || (op.Kind == ops.KindChurn && op.Value >= 700)
		}
		return n >= 2 && stranger && churn
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
	text := ops.Format(ops.NewScript("ids", min))
	require.Len(t, min, 3, text)
	require.True(t, fails(min))
	require.Less(t, calls, 60)
	require.Contains(t, text, "churn msg 1251", "the churn count is lowered (coarsely: plain, then halves)")
	require.Contains(t, text, "get sem key=0x2 mode=0600 size=1 as=1000", text)
	again, err := Minimize(context.Background(), script, oracle)
	require.NoError(t, err)
	require.Equal(t, min, again, "the same failure shrinks to the same script")
}

// A later get whose handle only stands for an id an earlier get also gives
// goes, once the earlier get binds the handle instead (the oracle here: the
// stat's handle is bound by the get with key 0x1, or by the one with key
// 0x2 while that with key 0x1 runs too).
func TestBindingMovesToAnEarlierGet(t *testing.T) {
	s := opstest.Ops(t, `subsystem ids
get msg key=0x1 mode=0600
list msg
h1 = get msg key=0x2 mode=0600
stat msg h1
`)
	oracle := func(_ context.Context, cands [][]ops.Op) ([]bool, error) {
		out := make([]bool, len(cands))
		for i, c := range cands {
			keys := map[int]int32{}
			first := false
			for _, op := range c {
				if op.Kind == ops.KindGet {
					first = first || op.Key == 1
					if op.Bind > 0 {
						keys[op.Bind] = op.Key
					}
				}
				if op.Kind == ops.KindStat && (keys[op.Obj.Handle] == 1 || keys[op.Obj.Handle] == 2 && first) {
					out[i] = true
				}
			}
		}
		return out, nil
	}
	got, err := Minimize(context.Background(), s, oracle)
	require.NoError(t, err)
	require.Len(t, got, 2, ops.Format(ops.NewScript("ids", got)))
	require.Equal(t, int32(1), got[0].Key, "the earlier get binds the handle")
	require.Equal(t, ops.KindStat, got[1].Kind)
}

// One bug that several advices reach (a seal that refuses willneed,
// pageout and dontdump) shrinks to one script whichever advice the
// generator drew: the first advice, in VMAAdvices' order, that still fails.
func TestAdvicesShrinkToOne(t *testing.T) {
	refused := map[ops.VMAAdvice]bool{ops.AdviceWillNeed: true, ops.AdvicePageOut: true, ops.AdviceDontDump: true}
	oracle := func(_ context.Context, cands [][]ops.Op) ([]bool, error) {
		out := make([]bool, len(cands))
		for i, c := range cands {
			for _, op := range c {
				out[i] = out[i] || op.Kind == ops.KindAdvise && refused[op.VMA.Advice]
			}
		}
		return out, nil
	}
	var got []string
	for _, advice := range []string{"willneed", "pageout", "dontdump"} {
		script := opstest.Ops(t, "subsystem vma\nmap w:0+4 rw-\nseal w:0+4\nadvise w:0+4 "+advice+"\n")
		min, err := Minimize(context.Background(), script, oracle)
		require.NoError(t, err)
		got = append(got, ops.Format(ops.NewScript("vma", min)))
	}
	require.Contains(t, got[0], "advise w:0+1 dontdump", got[0])
	require.Equal(t, got[0], got[1])
	require.Equal(t, got[0], got[2])
}

// Neighbouring mappings a run built one by one shrink to one mmap where
// the difference only needs the pages mapped: here, a range of at least 9
// mapped pages from page 2 (the candidates the oracle sees are judged by
// what they map, not how).
func TestNeighbouringMapsJoin(t *testing.T) {
	oracle := func(_ context.Context, cands [][]ops.Op) ([]bool, error) {
		out := make([]bool, len(cands))
		for i, c := range cands {
			var mapped [64]bool
			for _, op := range c {
				if op.Kind == ops.KindMap && op.VMA.Prot == ops.ProtRead|ops.ProtWrite {
					for p := op.VMA.Start; p < op.VMA.Start+op.VMA.Pages; p++ {
						mapped[p] = true
					}
				}
			}
			out[i] = true
			for p := 2; p < 11; p++ {
				out[i] = out[i] && mapped[p]
			}
		}
		return out, nil
	}
	script := opstest.Ops(t, "subsystem vma\nmap w:2+3 rw-\nmap w:5+4 rw-\nmap w:9+2 rw-\nmap w:11+1 r--\n")
	min, err := Minimize(context.Background(), script, oracle)
	require.NoError(t, err)
	require.Equal(t, "subsystem vma\nmap w:2+9 rw-\n", ops.Format(ops.NewScript("vma", min)))
	// Maps that are not alike, or not next to each other, stay apart.
	require.Empty(t, joinedMaps(opstest.Ops(t, "subsystem vma\nmap w:2+3 rw-\nmap w:5+4 r--\nmap w:10+2 r--\nmap t:12+1 r--\n")))
}
