package corpus_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// A finding file, as compare writes it, read back: the header's fields,
// the script, and each side's results (the body states B's; A's differ at
// step 2).
func ExampleParseFinding() {
	text := `# ipcfuzz divergence
# format: 2
# date: 2026-12-02T14:05:11Z
# command: ipcfuzz compare naive:alloc=legacy kernel --subsystem ids --engine rapid --seed 7 --equiv exact
# seed: 7
# script: 12 (script seed 99)
# side A: naive:alloc=legacy (naive 1)
# side B: kernel (kernel Linux 6.18.0)
# kernel: 6.18.0
# signature: ids/get/ok-ok
# hits: 3
# stated: B
# A step 2 -> id=32769
subsystem ids
get msg key=0x0 mode=0600 -> id=0
get msg key=0x0 mode=0600 -> id=1
`
	f, err := corpus.ParseFinding("example.ops", text)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Kind, f.Signature, f.Hits, "hits, seed", f.Seed, "on", f.Kernel)
	for i, st := range f.Script.Steps {
		fmt.Printf("%d %s: A -> %s, B -> %s\n", i+1, ops.FormatOp(st.Op),
			ops.FormatResult(st.Op, f.A.Results[i]), ops.FormatResult(st.Op, f.B.Results[i]))
	}
	// Output:
	// divergence ids/get/ok-ok 3 hits, seed 7 on 6.18.0
	// 1 get msg key=0x0 mode=0600: A -> id=0, B -> id=0
	// 2 get msg key=0x0 mode=0600: A -> id=32769, B -> id=1
}
