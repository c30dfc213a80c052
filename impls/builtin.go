// Package impls lists the built-in implementations, each a composition of
// domain models (Compose): the IPC namespace of its kind with the VMA
// address space of its kind. They are plain Go libraries that know nothing
// of plugins or the harness; options arrive with Reset.
//
// What a built-in can do is said once, by its parts (PartSpec): the
// subsystems it runs, the options it takes, whether it follows, blocks or
// counts, and the machine facts it reports all derive from them
// (Composed.Describe).
package impls

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	kernelvma "github.com/ipcfuzz/ipcfuzz/impls/kernel/vma"
	"github.com/ipcfuzz/ipcfuzz/impls/naive"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/impls/vma"
)

// Builtin is one built-in implementation: a name, what its ids promise,
// and its parts.
type Builtin struct {
	Name    string
	Version string
	// ExactIDs: it predicts the kernel's ids exactly, not only up to a
	// renaming.
	ExactIDs bool
	// Counters: it counts its own work for the complexity engine.
	Counters bool
	Parts    []PartSpec
}

// PartSpec declares one part of a built-in: the kind subsystems it runs,
// the options it takes and how it starts.
type PartSpec struct {
	Subsystems []string
	Options    ops.OptionSpecs
	Start      func() (ops.Model, error)
	// Handles reports whether the part has a handler for a kind (each
	// part's table of kinds, ops.Handlers); a test asks it of every kind of
	// the part's subsystems.
	Handles func(ops.Kind) bool
	// Optional: the implementation runs without this part where it cannot
	// start; Start's error is then a note of its Info.
	Optional bool
}

// The kind subsystems of the IPC part and of the VMA part.
var (
	ipcKinds = []string{"ids", "tasks", "shm", "msg", "sem"}
	vmaKinds = []string{"vma"}
)

// IPCPart is the IPC part of a composition: m runs the ids, tasks, shm, msg
// and sem kinds and takes options.
func IPCPart(m ops.Model, options ops.OptionSpecs) Part {
	return Part{Subsystems: ipcKinds, Model: m, Options: options}
}

// VMAPart is the VMA part of a composition: m runs the vma kinds.
func VMAPart(m ops.Model) Part { return Part{Subsystems: vmaKinds, Model: m} }

func builtins() []Builtin {
	return []Builtin{
		{Name: "kernel", Version: kernel.Release(), ExactIDs: true, Parts: []PartSpec{
			{Subsystems: ipcKinds, Options: kernel.Options, Start: kernel.New, Handles: kernel.Handles},
			{Subsystems: vmaKinds, Start: startKernelVMA, Handles: vmaHandlers.Handles, Optional: true},
		}},
		{Name: "naive", Version: "1", ExactIDs: true, Counters: true, Parts: []PartSpec{
			{Subsystems: ipcKinds, Options: naive.Options, Start: naive.New, Handles: ipcns.Handles},
			{Subsystems: vmaKinds, Options: vmaModelOptions, Start: vmaModel(func(q ops.VMAQuirks) ops.AddressSpace { return vma.NewNaive(q) }), Handles: vmaHandlers.Handles},
		}},
		{Name: "optimized", Version: "1", ExactIDs: true, Counters: true, Parts: []PartSpec{
			{Subsystems: ipcKinds, Options: optimized.Options, Start: optimized.New, Handles: ipcns.Handles},
			{Subsystems: vmaKinds, Options: vmaModelOptions, Start: vmaModel(func(q ops.VMAQuirks) ops.AddressSpace { return vma.NewOptimized(q) }), Handles: vmaHandlers.Handles},
		}},
	}
}

func vmaModel(make func(ops.VMAQuirks) ops.AddressSpace) func() (ops.Model, error) {
	return func() (ops.Model, error) { return NewVMAModelPart(make), nil }
}

// startKernelVMA starts the VMA helper process (it needs a C compiler).
func startKernelVMA() (ops.Model, error) {
	// In a guest under emulation the helper's calls take longer too.
	timeout := time.Duration(float64(kernelvma.DefaultCallTimeout) * kernel.Slowdown())
	h, err := kernelvma.StartRestarting(context.Background(), kernelvma.Options{CallTimeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("the vma subsystem is not available: %w", err)
	}
	return NewAddressSpaceModel(h), nil
}

// Subsystems are the script subsystems it runs when every part starts.
func (b Builtin) Subsystems() []string {
	var kinds []string
	for _, p := range b.Parts {
		kinds = append(kinds, p.Subsystems...)
	}
	return ops.CoveredBy(kinds)
}

// Options are the options its parts take, each once.
func (b Builtin) Options() ops.OptionSpecs {
	var out ops.OptionSpecs
	for _, p := range b.Parts {
		out = out.With(p.Options)
	}
	return out
}

// Start starts every part and returns the composition with what it says
// of itself: the subsystems the parts that started run, their facts, and
// a note for each optional part that could not start.
func (b Builtin) Start() (*Composed, ops.Info, error) {
	var parts []Part
	var notes []string
	for _, ps := range b.Parts {
		m, err := ps.Start()
		switch {
		case err != nil && ps.Optional:
			notes = append(notes, fmt.Sprintf("%s: %v", b.Name, err))
			continue
		case err != nil:
			_ = Compose(parts...).Close()
			return nil, ops.Info{}, fmt.Errorf("%s: %w", b.Name, err)
		}
		parts = append(parts, Part{Subsystems: ps.Subsystems, Model: m, Options: ps.Options})
	}
	if b.Name == "kernel" {
		if n := kernel.GuestNote(); n != "" {
			notes = append(notes, n)
		}
	}
	c := Compose(parts...)
	info := c.Describe(ops.Info{Name: b.Name, Version: b.Version, ExactIDs: b.ExactIDs, Counters: b.Counters})
	info.Notes = notes
	return c, info, nil
}

// Names lists the built-in implementations in a stable order.
func Names() []string {
	var names []string
	for _, b := range builtins() {
		names = append(names, b.Name)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the built-in implementation called name.
func Lookup(name string) (Builtin, error) {
	for _, b := range builtins() {
		if b.Name == name {
			return b, nil
		}
	}
	return Builtin{}, fmt.Errorf("no built-in implementation %q (have %s)", name, strings.Join(Names(), ", "))
}
