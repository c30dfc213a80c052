// Command edgemutant is a test-only implementation plugin: the optimized
// model with one deliberate bug at an edge few scripts reach, chosen when
// it is built (docs/plugins.md's plugin recipe):
//
//	go build -ldflags "-X main.mutation=earlywrap" -o bin/earlywrap ./cmd/ipcfuzz/testdata/edgemutant
//	go run ./cmd/ipcfuzz compare bin/earlywrap optimized --checks 2000   # exit 1
//
// earlywrap: seq wraps one value early (from 65533 to 0); noupperclamp: an
// exit's undo is not clamped at SEMVMX; norestart: after a complex sleeper
// succeeds, the wake-up scan goes on down the queue instead of starting
// again from the head; keepmaxidx: a removal never lowers max_idx.
package main

import (
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/impls/semq"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mutation is set with -ldflags "-X main.mutation=...".
var mutation string

// earlyWrap is the cyclic allocator with a seq that never reaches 65534.
type earlyWrap struct{}

func (earlyWrap) Alloc(st *ipcns.AllocState, t ipcns.Table) (int, int, bool) {
	idx, seq, ok := ipcns.Cyclic.Alloc(st, t)
	if ok && seq == ops.SeqMax-1 {
		st.Seq, seq = 0, 0
	}
	return idx, seq, ok
}

// keepMaxIdx is the optimized table whose max_idx only ever goes up.
type keepMaxIdx struct {
	*optimized.IDR
	max *int
}

func (t keepMaxIdx) Insert(o *ipcns.Obj) {
	t.IDR.Insert(o)
	*t.max = max(*t.max, o.Idx)
}

func (t keepMaxIdx) MaxIdx() int { return *t.max }

func main() {
	table := func() ipcns.Table { return optimized.NewIDR() }
	alloc := ipcns.Cyclic
	var quirk semq.Quirk
	switch mutation {
	case "earlywrap":
		alloc = earlyWrap{}
	case "noupperclamp":
		quirk = semq.QuirkUndoNoUpperClamp
	case "norestart":
		quirk = semq.QuirkNoRestartAfterComplex
	case "keepmaxidx":
		table = func() ipcns.Table { m := -1; return keepMaxIdx{optimized.NewIDR(), &m} }
	default:
		fmt.Fprintf(os.Stderr, "edgemutant: built without a known mutation (%q)\n", mutation)
		os.Exit(2)
	}
	ns := ipcns.New(table, alloc)
	ns.SetSemOptions(semq.Options{Structure: semq.PerSemaphore, Quirk: quirk})
	info := impls.Compose(impls.IPCPart(ns, ipcns.Options)).Describe(ops.Info{Name: "edgemutant-" + mutation, Version: "test", ExactIDs: true})
	plugins.Serve(ops.NewLocal(info, ns))
}
