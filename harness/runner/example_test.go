package runner_test

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// inProcess is a built-in implementation started in this process.
func inProcess(spec string) runner.Side {
	name, cfg, _ := ops.ParseImplName(spec)
	b, _ := impls.Lookup(name)
	m, info, _ := b.Start()
	return runner.Side{Name: spec, Impl: ops.NewLocal(info, m), Config: cfg, Info: info}
}

// Two implementations compared in process, the way every command compares
// them: the legacy id allocator (Linux < 5.2) against the cyclic one. The
// pair finds the divergence and shrinks the script to the two operations
// that show it.
func ExampleNewPair() {
	ctx := context.Background()
	legacy, cyclic := inProcess("naive:alloc=legacy"), inProcess("optimized")
	defer legacy.Impl.Close()
	defer cyclic.Impl.Close()
	p, err := runner.NewPair(ctx, legacy, cyclic, "ids", equiv.Exact)
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, _ := ops.ParseString(`subsystem ids
h1 = get sem key=0x0 mode=0600
list sem
h2 = get msg key=0x0 mode=0600
h3 = get msg key=0x0 mode=0600
rmid msg h2
`)
	v, _ := p.CheckOne(ctx, sc.Ops())
	fmt.Println(v.Div)
	shrunk, _ := p.Shrink(ctx, sc.Ops(), v, p.SameSignature(p.Signature(sc.Ops(), v)))
	fmt.Print(ops.Format(ops.NewScript("ids", shrunk.Script)))
	// Output:
	// step 4: h3 = get msg key=0x0 mode=0600: A -> id=32769, B -> id=1
	// subsystem ids
	// get msg key=0x0 mode=0600 size=1
	// get msg key=0x0 mode=0600 size=1
}

// Run draws scripts from a seed, compares them in batches on every pair
// (one per job) and counts what it compared.
func ExampleRun() {
	a, b := inProcess("naive"), inProcess("optimized")
	defer a.Impl.Close()
	defer b.Impl.Close()
	p, _ := runner.NewPair(context.Background(), a, b, "shm", equiv.Exact)
	script, _ := ops.ParseString("subsystem shm\nh1 = get shm key=0x0 mode=0600 size=1\na1 = shmat shm h1\nrmid shm h1\n")
	res, err := runner.Run(context.Background(), runner.Options{
		Pairs:  []*runner.Pair{p},
		Source: runner.Seeded(func(seed uint64) []ops.Op { return script.Ops() }),
		Seed:   1, Checks: 100,
	})
	fmt.Println(res.Checks, res.Ops, res.Divergences, err)
	// Output:
	// 100 300 0 <nil>
}
