package vmatest

import (
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Scripts are drawn in a part of the window small enough that VMAs keep
// meeting their neighbours.
const (
	hotPages = 24 // the pages most operations target
	maxLen   = 6  // the longest range most operations use
)

// genState is what the generator remembers to make sensible calls: which
// file handles are bound.
type genState struct {
	bound [ops.VMAMaxHandles + 1]bool
}

// Script returns a generator of scripts of up to maxCalls calls.
func Script(maxCalls int) *rapid.Generator[[]Call] {
	return rapid.Custom(func(t *rapid.T) []Call {
		var g genState
		n := rapid.IntRange(1, maxCalls).Draw(t, "calls")
		calls := make([]Call, 0, n)
		for range n {
			calls = append(calls, g.call(t))
		}
		return calls
	})
}

func (g *genState) call(t *rapid.T) Call {
	switch k := rapid.IntRange(0, 99).Draw(t, "op"); {
	case k < 28:
		return Call{Op: Map, Args: g.mapArgs(t)}
	case k < 43:
		return Call{Op: Protect, Args: withProt(t, rangeArgs(t))}
	case k < 58:
		a := rangeArgs(t)
		a.Pages, a.Write = 1, rapid.IntRange(0, 3).Draw(t, "write") > 0
		return Call{Op: Touch, Args: a}
	case k < 68:
		a := rangeArgs(t)
		a.Advice = rapid.SampledFrom(ops.VMAAdvices).Draw(t, "advice")
		return Call{Op: Advise, Args: a}
	case k < 73:
		return Call{Op: Unmap, Args: rangeArgs(t)}
	case k < 77:
		a := rangeArgs(t)
		a.OnFault = rapid.Bool().Draw(t, "onfault")
		return Call{Op: Lock, Args: a}
	case k < 80:
		return Call{Op: Unlock, Args: rangeArgs(t)}
	case k < 89:
		return Call{Op: Remap, Args: remapArgs(t)}
	case k < 94:
		return Call{Op: Brk, Args: ops.VMAArgs{Break: rapid.Int64Range(-ops.VMABrkBelow, 10).Draw(t, "break")}}
	}
	return g.fileCall(t)
}

// rangeArgs draws a range, mostly in the hot part of the window, sometimes
// in the heap area, sometimes empty.
func rangeArgs(t *rapid.T) ops.VMAArgs {
	var a ops.VMAArgs
	limit := int64(hotPages)
	if rapid.IntRange(0, 9).Draw(t, "heap") == 0 {
		a.Heap, limit = true, 12
	}
	a.Start = rapid.Int64Range(0, limit-1).Draw(t, "start")
	a.Pages = rapid.Int64Range(1, min(maxLen, limit-a.Start)).Draw(t, "pages")
	if rapid.IntRange(0, 39).Draw(t, "empty") == 0 {
		a.Pages = 0
	}
	return a
}

var prots = []ops.VMAProt{
	ops.ProtRead | ops.ProtWrite, ops.ProtRead | ops.ProtWrite, ops.ProtRead | ops.ProtWrite, ops.ProtRead,
	0, ops.ProtRead | ops.ProtExec, ops.ProtExec, ops.ProtRead | ops.ProtWrite | ops.ProtExec, ops.ProtWrite,
}

func withProt(t *rapid.T, a ops.VMAArgs) ops.VMAArgs {
	a.Prot = rapid.SampledFrom(prots).Draw(t, "prot")
	return a
}

func (g *genState) mapArgs(t *rapid.T) ops.VMAArgs {
	a := withProt(t, rangeArgs(t))
	for _, f := range []struct {
		bit  ops.VMAMapFlags
		odds int
	}{{ops.MapShared, 6}, {ops.MapNoReserve, 10}, {ops.MapPopulate, 10}, {ops.MapLocked, 20}, {ops.MapStack, 20}} {
		if rapid.IntRange(0, f.odds-1).Draw(t, "flag") == 0 {
			a.Flags |= f.bit
		}
	}
	if rapid.IntRange(0, 2).Draw(t, "file") == 0 {
		a.File = rapid.IntRange(1, 3).Draw(t, "handle")
		// The same shift keeps neighbouring mappings contiguous in the file;
		// others break contiguity; a few reach past the end of the file.
		shift := rapid.SampledFrom([]int64{0, 0, 0, 1, 8, ops.VMAFilePages - 2}).Draw(t, "shift")
		a.Offset = min(a.Start+shift, ops.VMAFileOffsetMax-a.Pages)
	}
	return a
}

func remapArgs(t *rapid.T) ops.VMAArgs {
	a := rangeArgs(t)
	limit := ops.VMARegionLimit(a.Heap)
	if a.Heap {
		limit = 12
	}
	a.NewPages = rapid.Int64Range(0, min(maxLen+2, limit-a.Start)).Draw(t, "newpages")
	if a.NewPages == 0 && rapid.IntRange(0, 9).Draw(t, "zero") > 0 {
		a.NewPages = 1
	}
	if rapid.Bool().Draw(t, "fixed") {
		a.Fixed = true
		a.Target = rapid.Int64Range(0, limit-a.NewPages).Draw(t, "target")
	}
	return a
}

func (g *genState) fileCall(t *rapid.T) Call {
	var free []int
	for h := 1; h <= ops.VMAMaxHandles; h++ {
		if !g.bound[h] {
			free = append(free, h)
		}
	}
	if len(free) == 0 {
		return Call{Op: Brk, Args: ops.VMAArgs{Break: 0}} // every handle is bound
	}
	f := ops.VMAFileArgs{
		Handle:   rapid.SampledFrom(free).Draw(t, "bind"),
		ReadOnly: rapid.IntRange(0, 3).Draw(t, "ro") == 0,
	}
	op := rapid.SampledFrom([]Op{Open, Open, Reopen, Dup}).Draw(t, "fileop")
	if op == Open {
		g.bound[f.Handle] = true
		return Call{Op: Open, File: f}
	}
	f.Of = rapid.IntRange(1, 3).Draw(t, "of")
	if op == Dup {
		f.ReadOnly = false
	}
	if g.bound[f.Of] {
		g.bound[f.Handle] = true
	}
	return Call{Op: op, File: f}
}
