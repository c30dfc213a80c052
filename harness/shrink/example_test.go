package shrink_test

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/shrink"
)

// The shrinker knows operations only through their specs. Here the
// "failure" is any script that removes a queue it made: the twelve
// operations shrink to the two that show it, with plainer values (no key,
// no creat, mode 0600) and handles numbered again from 1.
func ExampleMinimize() {
	sc, _ := ops.ParseString(`subsystem ids
h1 = get sem key=0x5 creat mode=0644 size=3
h2 = get msg key=0x7 creat mode=0640
stat msg h2
list msg
h3 = get shm key=0x0 mode=0600 size=8192
next_id msg 400
h4 = get msg key=0x0 mode=0666
stat sem h1
rmid msg h4
list sem
rmid shm h3
stat msg h4
`)
	removesAQueue := func(s []ops.Op) bool {
		queues := map[int]bool{}
		for _, op := range s {
			switch {
			case op.Kind == ops.KindGet && op.Type == ops.Msg && op.Bind > 0:
				queues[op.Bind] = true
			case op.Kind == ops.KindRmid && op.Type == ops.Msg && queues[op.Obj.Handle]:
				return true
			}
		}
		return false
	}
	oracle := func(_ context.Context, cands [][]ops.Op) ([]bool, error) {
		fails := make([]bool, len(cands))
		for i, c := range cands {
			fails[i] = removesAQueue(c)
		}
		return fails, nil
	}
	min, err := shrink.Minimize(context.Background(), sc.Ops(), oracle)
	fmt.Print(ops.Format(ops.NewScript("ids", min)), err, "\n")
	// Output:
	// subsystem ids
	// h1 = get msg key=0x0 mode=0600 size=1
	// rmid msg h1
	// <nil>
}
