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

// A script can be built in code as well as parsed: operations are values,
// and Format writes the one canonical text that Parse reads back.
func ExampleFormat() {
	sc := ops.NewScript("ids", []ops.Op{
		{Kind: ops.KindGet, Type: ops.Shm, Key: ops.IPCPrivate, Creat: true, Mode: 0o600, Size: 4096, Bind: 1},
		{Kind: ops.KindRmid, Type: ops.Shm, Obj: ops.Ref{Handle: 1}},
	})
	text := ops.Format(sc)
	fmt.Print(text)
	back, err := ops.ParseString(text)
	fmt.Println(err == nil && ops.Format(back) == text)
	// Output:
	// subsystem ids
	// h1 = get shm key=0x0 creat mode=0600 size=4096
	// rmid shm h1
	// true
}

// Machine facts travel by name: what the kernel side reports and the
// other side of a pair is given.
func ExampleFacts() {
	f := ops.Facts{}.With(ops.FactShmMaxPages, 6291456)
	pages, known := f.ShmMaxPages()
	fmt.Println(pages, known, f.Map())
	_, known = f.VMAQuirks()
	fmt.Println(known, f)
	// Output:
	// 6291456 true map[shm_max_pages:6291456]
	// false shm_max_pages=6291456
}

// An implementation declares its options once; parsing, defaults and the
// refusal of an unknown one come from the declaration.
func ExampleOptionSpecs_Parse() {
	specs := ops.OptionSpecs{{Name: "alloc", Values: []string{"cyclic", "legacy"}}, ops.CapsOption}
	opts, err := specs.Parse(map[string]string{"alloc": "legacy"})
	fmt.Println(opts, err)
	_, err = specs.Parse(map[string]string{"alloc": "lowest"})
	fmt.Println(err)
	_, err = specs.Parse(map[string]string{"seq": "off"})
	fmt.Println(err)
	fmt.Println(specs)
	// Output:
	// map[alloc:legacy caps:none] <nil>
	// option alloc=lowest: want cyclic or legacy
	// unknown option seq=off (have alloc=cyclic|legacy, caps=none|sys_resource)
	// alloc=cyclic|legacy,caps=none|sys_resource
}
