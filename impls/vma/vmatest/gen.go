package vmatest

import (
	"math/rand/v2"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Scripts are drawn in a part of each region small enough that VMAs keep
// meeting their neighbours.
const (
	hotPages  = 16 // the window pages most operations target
	heapPages = 12 // the heap pages operations target
	maxLen    = 6  // the longest range most operations use
)

// Script returns a rapid generator of scripts of 1 to maxCalls calls. It
// draws a seed and builds the script with Generate: rapid's integers lean
// towards their edges, which would make every mapping carry every flag;
// a failing script is best shrunk with Minimize.
func Script(maxCalls int) *rapid.Generator[[]Call] {
	return rapid.Custom(func(t *rapid.T) []Call {
		return Generate(rapid.Uint64().Draw(t, "seed"), maxCalls)
	})
}

// Generate builds the script of a seed: 1 to maxCalls calls.
func Generate(seed uint64, maxCalls int) []Call {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	n := 1 + g.r.IntN(maxCalls)
	calls := make([]Call, 0, n)
	if g.chance(70) {
		// Most scripts start from a mapping that later calls cut up.
		a := ops.VMAArgs{Start: int64(g.r.IntN(4)), Pages: 4 + int64(g.r.IntN(9)), Prot: g.prot()}
		g.edges[0] = append(g.edges[0], a.Start, a.Start+a.Pages)
		calls = append(calls, Call{Op: Map, Args: a})
	}
	for len(calls) < n {
		calls = append(calls, g.call())
	}
	return calls
}

// gen remembers what makes the next calls interesting: which file handles
// are bound and the edges of the ranges used so far (so that later ranges
// start or end on them, next to or inside earlier mappings).
type gen struct {
	r     *rand.Rand
	bound [ops.VMAMaxHandles + 1]bool
	edges [2][]int64 // per region
}

func (g *gen) chance(pct int) bool { return g.r.IntN(100) < pct }

func (g *gen) call() Call {
	switch k := g.r.IntN(100); {
	case k < 28:
		return Call{Op: Map, Args: g.mapArgs()}
	case k < 42:
		a := g.rangeArgs()
		a.Prot = g.prot()
		return Call{Op: Protect, Args: a}
	case k < 56:
		a := g.rangeArgs()
		a.Start = min(a.Start+int64(g.r.IntN(int(max(a.Pages, 1)))), ops.VMARegionLimit(a.Region())-1)
		a.Pages, a.Write = 1, g.chance(70)
		return Call{Op: Touch, Args: a}
	case k < 66:
		a := g.rangeArgs()
		a.Advice = ops.VMAAdvices[g.r.IntN(len(ops.VMAAdvices))]
		return Call{Op: Advise, Args: a}
	case k < 71:
		return Call{Op: Unmap, Args: g.rangeArgs()}
	case k < 76:
		a := g.rangeArgs()
		a.OnFault = g.chance(30)
		return Call{Op: Lock, Args: a}
	case k < 79:
		return Call{Op: Unlock, Args: g.rangeArgs()}
	case k < 89:
		return Call{Op: Remap, Args: g.remapArgs()}
	case k < 95:
		return Call{Op: Brk, Args: ops.VMAArgs{Break: int64(g.r.IntN(13)) - ops.VMABrkBelow}}
	}
	return g.fileCall()
}

func regionIndex(heap bool) int {
	if heap {
		return 1
	}
	return 0
}

// point draws a page of the region: an edge used before, or any page of
// its hot part.
func (g *gen) point(heap bool, limit int64) int64 {
	e := g.edges[regionIndex(heap)]
	if len(e) > 0 && g.chance(55) {
		return min(e[g.r.IntN(len(e))], limit-1)
	}
	return int64(g.r.IntN(int(limit)))
}

// rangeArgs draws a range, mostly in the hot part of the window, sometimes
// in the heap area, rarely empty, and remembers its edges.
func (g *gen) rangeArgs() ops.VMAArgs {
	var a ops.VMAArgs
	limit := int64(hotPages)
	if g.chance(12) {
		a.Heap, limit = true, heapPages
	}
	a.Start = g.point(a.Heap, limit)
	a.Pages = 1 + int64(g.r.IntN(int(min(maxLen, limit-a.Start))))
	if g.chance(2) {
		a.Pages = 0
	}
	i := regionIndex(a.Heap)
	g.edges[i] = append(g.edges[i], a.Start, a.Start+a.Pages)
	if len(g.edges[i]) > 12 {
		g.edges[i] = g.edges[i][2:]
	}
	return a
}

// prot draws a protection: read-write most often, every other one too.
func (g *gen) prot() ops.VMAProt {
	const rw = ops.ProtRead | ops.ProtWrite
	switch k := g.r.IntN(12); {
	case k < 4:
		return rw
	case k < 6:
		return ops.ProtRead
	case k < 8:
		return 0
	case k == 8:
		return ops.ProtRead | ops.ProtExec
	case k == 9:
		return ops.ProtExec
	case k == 10:
		return rw | ops.ProtExec
	}
	return ops.ProtWrite
}

func (g *gen) mapArgs() ops.VMAArgs {
	a := g.rangeArgs()
	a.Prot = g.prot()
	for _, f := range []struct {
		bit ops.VMAMapFlags
		pct int
	}{{ops.MapShared, 12}, {ops.MapNoReserve, 8}, {ops.MapPopulate, 8}, {ops.MapLocked, 5}, {ops.MapStack, 5}} {
		if g.chance(f.pct) {
			a.Flags |= f.bit
		}
	}
	if g.chance(30) && (g.anyBound() || g.chance(20)) {
		a.File = g.handle()
		// The same shift keeps neighbouring mappings contiguous in the file;
		// others break contiguity; a few reach past the end of the file.
		shift := []int64{0, 0, 0, 0, 1, 8, ops.VMAFilePages - 3}[g.r.IntN(7)]
		a.Offset = min(a.Start+shift, ops.VMAFileOffsetMax-a.Pages)
	}
	return a
}

func (g *gen) anyBound() bool {
	for _, b := range g.bound {
		if b {
			return true
		}
	}
	return false
}

// handle draws a file handle: mostly a bound one, sometimes any.
func (g *gen) handle() int {
	var bound []int
	for h := 1; h <= ops.VMAMaxHandles; h++ {
		if g.bound[h] {
			bound = append(bound, h)
		}
	}
	if len(bound) > 0 && g.chance(90) {
		return bound[g.r.IntN(len(bound))]
	}
	return 1 + g.r.IntN(3)
}

func (g *gen) remapArgs() ops.VMAArgs {
	a := g.rangeArgs()
	limit := int64(hotPages)
	if a.Heap {
		limit = heapPages
	}
	a.NewPages = 1 + int64(g.r.IntN(int(min(maxLen+2, limit-a.Start))))
	if g.chance(3) {
		a.NewPages = 0
	}
	if g.chance(55) {
		a.Fixed = true
		a.Target = g.point(a.Heap, limit-a.NewPages+1)
		a.Target = min(a.Target, limit-a.NewPages)
	}
	return a
}

func (g *gen) fileCall() Call {
	var free []int
	for h := 1; h <= ops.VMAMaxHandles; h++ {
		if !g.bound[h] {
			free = append(free, h)
		}
	}
	if len(free) == 0 {
		return Call{Op: Brk, Args: ops.VMAArgs{Break: 0}} // every handle is bound
	}
	f := ops.VMAFileArgs{Handle: free[g.r.IntN(len(free))], ReadOnly: g.chance(25)}
	switch k := g.r.IntN(10); {
	case k < 5:
		g.bound[f.Handle] = true
		return Call{Op: Open, File: f}
	case k < 8:
		f.Of = g.handle()
		g.bound[f.Handle] = g.bound[f.Of]
		return Call{Op: Reopen, File: f}
	}
	f.Of, f.ReadOnly = g.handle(), false
	g.bound[f.Handle] = g.bound[f.Of]
	return Call{Op: Dup, File: f}
}
