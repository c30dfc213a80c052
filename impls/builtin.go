// Package impls lists the built-in implementations: plain Go libraries that
// know nothing of plugins or the harness. Each one is an ops.Model covering
// every subsystem it supports; its options arrive with Reset.
package impls

import (
	"fmt"
	"sort"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
)

// Builtin is one built-in implementation.
type Builtin struct {
	Info ops.Info
	New  func() (ops.Model, error)
	// Options describes the options its Reset takes.
	Options string
}

func builtins() map[string]Builtin {
	caps := ops.OptionCaps + "=none|" + ops.CapSysResource
	return map[string]Builtin{
		"naive":     {Info: naive.Info(), New: naive.New, Options: "alloc=cyclic|legacy,ncnt=sus|legacy," + caps},
		"optimized": {Info: optimized.Info(), New: optimized.New, Options: caps},
		"kernel":    {Info: kernel.Info(), New: kernel.New, Options: caps + " (only what the process has)"},
	}
}

// Names lists the built-in implementations in a stable order.
func Names() []string {
	var names []string
	for n := range builtins() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the built-in implementation called name.
func Lookup(name string) (Builtin, error) {
	b, ok := builtins()[name]
	if !ok {
		return Builtin{}, fmt.Errorf("no built-in implementation %q (have %v)", name, Names())
	}
	return b, nil
}
