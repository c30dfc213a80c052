package impls_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
)

// noSeqBump allocates like Linux >= 5.2 but never moves seq: a mutant.
type noSeqBump struct{}

func (noSeqBump) Alloc(st *ipcns.AllocState, t ipcns.Table) (int, int, bool) {
	seq := st.Seq
	idx, _, ok := ipcns.Cyclic.Alloc(st, t)
	st.Seq = seq
	return idx, seq, ok
}

// A mutant is a composition with one part replaced: here the optimized
// IPC namespace with an allocator that forgets to bump seq. What it can
// do (the subsystems its parts run, whether tasks block, whether it
// follows the other side where woken tasks race) comes from its parts.
func ExampleCompose() {
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, noSeqBump{})
	m := impls.Compose(impls.IPCPart(ns, ipcns.Options))
	info := m.Describe(ops.Info{Name: "noseqbump"})
	fmt.Println(info.Subsystems, info.Blocking, info.Follows)
	// 82 queues made and removed one after the other: the cyclic cursor
	// wraps, and the last id must carry a new seq.
	churn := []ops.Op{{Kind: ops.KindChurn, Type: ops.Msg, Value: 82}}
	mutant, _ := ops.Run(m, ops.Config{}, churn)
	good, _ := optimized.New()
	right, _ := ops.Run(good, ops.Config{}, churn)
	fmt.Println(mutant.Results[0].ID, right.Results[0].ID)
	fmt.Println(m.Reset(ops.Config{Options: map[string]string{"alloc": "legacy"}}))
	// Output:
	// [ids shm msg sem] true true
	// 17 32785
	// unknown option alloc=legacy (have caps=none|sys_resource)
}
