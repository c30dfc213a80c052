// Package impls lists the built-in implementations, each a composition of
// domain models (Compose): the IPC namespace of its kind with the VMA
// address space of its kind. They are plain Go libraries that know nothing
// of plugins or the harness; options arrive with Reset.
package impls

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	kernelvma "github.com/ipcfuzz/ipcfuzz/impls/kernel/vma"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/impls/vma"
)

// Builtin is one built-in implementation.
type Builtin struct {
	// Info is as declared; Open narrows its subsystems to those the parts
	// that started here run.
	Info ops.Info
	// New starts it.
	New func() (ops.Model, error)
	// Options describes the options its Reset takes.
	Options string
}

// The kind subsystems of the IPC part and of the VMA part.
var (
	ipcSubsystems = []string{"ids", "tasks", "shm", "msg", "sem"}
	vmaSubsystems = []string{"vma"}
	limitOptions  = []string{ops.LimitPrefix + ops.LimitShmMaxPages}
)

func builtins() map[string]Builtin {
	caps := ops.OptionCaps + "=none|" + ops.CapSysResource
	return map[string]Builtin{
		"naive": {Info: withVMA(naive.Info()), New: newNaive,
			Options: "alloc=cyclic|legacy,ncnt=sus|legacy," + caps},
		"optimized": {Info: withVMA(optimized.Info()), New: newOptimized, Options: caps},
		"kernel":    {Info: withVMA(kernel.Info()), New: newKernel, Options: caps + " (only what the process has)"},
	}
}

func withVMA(info ops.Info) ops.Info {
	info.Subsystems = append(slices.Clone(info.Subsystems), "vma")
	return info
}

func newNaive() (ops.Model, error) {
	m, err := naive.New()
	if err != nil {
		return nil, err
	}
	return Compose(
		Part{Subsystems: ipcSubsystems, Model: m, Options: append([]string{"alloc", "ncnt", ops.OptionCaps}, limitOptions...)},
		Part{Subsystems: vmaSubsystems, Model: NewVMAModelPart(func(q ops.VMAQuirks) ops.AddressSpace { return vma.NewNaive(q) }),
			Options: []string{ops.LimitPrefix + ops.LimitVMAQuirks}},
	), nil
}

func newOptimized() (ops.Model, error) {
	m, err := optimized.New()
	if err != nil {
		return nil, err
	}
	return Compose(
		Part{Subsystems: ipcSubsystems, Model: m, Options: append([]string{ops.OptionCaps}, limitOptions...)},
		Part{Subsystems: vmaSubsystems, Model: NewVMAModelPart(func(q ops.VMAQuirks) ops.AddressSpace { return vma.NewOptimized(q) }),
			Options: []string{ops.LimitPrefix + ops.LimitVMAQuirks}},
	), nil
}

// newKernel composes the IPC thread adapter with the VMA helper process;
// without the helper (no C compiler), the kernel runs the IPC subsystems
// only, and says why on stderr.
func newKernel() (ops.Model, error) {
	m, err := kernel.New()
	if err != nil {
		return nil, err
	}
	parts := []Part{{Subsystems: ipcSubsystems, Model: m, Options: []string{ops.OptionCaps}}}
	if h, err := kernelvma.Start(context.Background(), kernelvma.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "kernel: the vma subsystem is not available: %v\n", err)
	} else {
		parts = append(parts, Part{Subsystems: vmaSubsystems, Model: NewAddressSpaceModel(h)})
	}
	return Compose(parts...), nil
}

// limits are the machine facts the parts found: the VMA quirks of a kernel
// helper.
func (c *Composed) limits() map[string]int64 {
	out := map[string]int64{}
	for _, p := range c.parts {
		if a, ok := p.Model.(*AddressSpaceModel); ok && a.remake == nil {
			if q, ok := a.as.(interface{ Quirks() ops.VMAQuirks }); ok {
				out[ops.LimitVMAQuirks] = int64(q.Quirks())
			}
		}
	}
	return out
}

// InfoOf is what a started built-in says of itself: its declared Info, with
// the subsystems no started part runs left out and the machine facts its
// parts found added.
func InfoOf(b Builtin, m ops.Model) ops.Info {
	info := b.Info
	c, ok := m.(*Composed)
	if !ok {
		return info
	}
	var subs []string
	for _, s := range info.Subsystems {
		if _, err := c.part(s); err == nil {
			subs = append(subs, s)
		}
	}
	info.Subsystems = subs
	limits := map[string]int64{}
	for k, v := range info.Limits {
		limits[k] = v
	}
	for k, v := range c.limits() {
		limits[k] = v
	}
	if len(limits) > 0 {
		info.Limits = limits
	}
	return info
}

// LimitOptions turns the machine facts one side reports into the options
// that give them to the other side.
func LimitOptions(limits map[string]int64) map[string]string {
	out := map[string]string{}
	for k, v := range limits {
		out[ops.LimitPrefix+k] = strconv.FormatInt(v, 10)
	}
	return out
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
