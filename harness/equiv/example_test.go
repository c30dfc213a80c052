package equiv_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Two outcomes of one script compared: exactly, the ids must be the same;
// under ids-renamed, one consistent renaming of ids is allowed (what the
// legacy and the cyclic allocator need).
func ExampleCompare() {
	sc, _ := ops.ParseString("subsystem ids\nh1 = get msg key=0x0 mode=0600\nrmid msg h1\n")
	a := ops.Outcome{Results: []ops.Result{{ID: 32768}, {}}}
	b := ops.Outcome{Results: []ops.Result{{ID: 0}, {}}}
	fmt.Println(equiv.Compare(equiv.Exact, sc.Ops(), a, b))
	fmt.Println(equiv.Compare(equiv.IDsRenamed, sc.Ops(), a, b) == nil)
	// Output:
	// step 1: h1 = get msg key=0x0 mode=0600: A -> id=32768, B -> id=0
	// true
}
