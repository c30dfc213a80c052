// Command shrinkfail is a test-only implementation plugin that fails while
// a divergence is shrunk: the optimized model whose final state shows a
// msgmni one too high (so every script diverges), and which, on a script
// of two operations or fewer (only the shrinker makes those here), hangs
// past any call timeout or dies, as it is built:
//
//	go build -ldflags "-X main.mode=hang" ./cmd/ipcfuzz/testdata/shrinkfail
//
// The finding must still be written, with the shortest diverging script the
// shrink found before (three operations).
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mode is set with -ldflags "-X main.mode=hang" (or die).
var mode string

// failing is the optimized model counting the operations of each script.
type failing struct {
	m ops.Model
	n int
}

func (f *failing) Reset(cfg ops.Config) error { f.n = 0; return f.m.Reset(cfg) }

func (f *failing) Apply(op ops.Op) (ops.Result, error) { f.n++; return f.m.Apply(op) }

func (f *failing) Close() error { return f.m.Close() }

func (f *failing) Snapshot() (ops.Snapshot, error) {
	if f.n <= 2 {
		if mode == "die" {
			os.Exit(3)
		}
		time.Sleep(time.Hour)
	}
	s, err := f.m.Snapshot()
	s.IDs[ops.Msg].Limit++
	return s, err
}

func main() {
	if mode != "hang" && mode != "die" {
		fmt.Fprintf(os.Stderr, "shrinkfail: built without a known mode (%q)\n", mode)
		os.Exit(2)
	}
	m, err := optimized.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	plugins.Serve(ops.NewLocal(ops.Info{Name: "shrinkfail-" + mode, Version: "test", Subsystems: []string{"ids"}}, &failing{m: m}))
}
