package ops_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A script names its subsystem, then one operation a line; "h1 = " binds a
// handle to whatever id the get returns on each implementation, and
// "-> result" states what every implementation must return.
func ExampleParse() {
	sc, err := ops.ParseString(`subsystem ids
h1 = get msg key=0x10 creat mode=0600 -> id=0
stat msg h1 -> key=0x10 mode=0600 owner=0 size=0
rmid msg h1 -> ok
stat msg h1 -> EINVAL
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range sc.Steps {
		fmt.Printf("%-28s expects %s\n", ops.FormatOp(st.Op), ops.FormatResult(st.Op, *st.Want))
	}
	// Output:
	// h1 = get msg key=0x10 creat mode=0600 expects id=0
	// stat msg h1                  expects key=0x10 mode=0600 owner=0 size=0
	// rmid msg h1                  expects ok
	// stat msg h1                  expects EINVAL
}
