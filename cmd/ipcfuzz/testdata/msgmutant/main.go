// Command msgmutant is a test-only implementation plugin: the optimized
// model with one deliberate message-queue bug, chosen when it is built:
//
//	go build -ldflags "-X main.mutation=fits" ./cmd/ipcfuzz/testdata/msgmutant
//
// fits: the fits test with < instead of <=; lifo: receivers served newest
// first; e2big: a receiver too small for a message is left asleep.
package main

import (
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mutation is set with -ldflags "-X main.mutation=...".
var mutation string

func main() {
	quirks := map[string]msgq.Quirk{"fits": msgq.QuirkFitsStrict, "lifo": msgq.QuirkReceiversLIFO, "e2big": msgq.QuirkE2BIGStays}
	q, ok := quirks[mutation]
	if !ok {
		fmt.Fprintf(os.Stderr, "msgmutant: built without a known mutation (%q)\n", mutation)
		os.Exit(2)
	}
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	ns.SetMsgQuirks(q)
	info := optimized.Info()
	info.Name = "msgmutant-" + mutation
	plugins.Serve(ops.NewLocal(info, ns))
}
