package sides_test

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// OpenPair opens two implementations the way every command does (here
// the built-ins inside this process; without InProcess they are plugin
// processes of the ipcfuzz binary) and builds their pair: where woken
// tasks race, the model that can follow takes the other side's way.
func ExampleOpenPair() {
	ctx := context.Background()
	p, closeAll, err := sides.OpenPair(ctx, "naive", "optimized", "msg", equiv.Exact, sides.Options{InProcess: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeAll()
	fmt.Println(p.A.Name, p.A.Follows, p.B.Name, p.B.Follows)
	sc, _ := ops.ParseString("subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgsnd msg h1 type=1 size=3 fill=0 nowait\nmsgrcv msg h1 size=8 type=0 nowait\n")
	v, err := p.CheckOne(ctx, sc.Ops())
	fmt.Println(v.Diverged(), err, ops.FormatResult(sc.Steps[2].Op, v.Out[1].Results[2]))
	_, _, err = sides.OpenPair(ctx, "naive:alloc=lowest", "optimized", "msg", equiv.Exact, sides.Options{InProcess: true})
	fmt.Println(err)
	// Output:
	// naive false optimized true
	// false <nil> type=1 text=abc
	// naive:alloc=lowest refuses its configuration: option alloc=lowest: want cyclic or legacy
}
