// Command vmamutant is a test-only implementation plugin: the optimized VMA
// model with one deliberate merging bug, chosen when it is built
// (or, without one, by $IPCFUZZ_MUTATION at run time):
//
//	go build -ldflags "-X main.mutation=anon" ./cmd/ipcfuzz/testdata/vmamutant
//
// anon: merges ignore anon_vma compatibility: every anon_vma is one and the
// same, so two VMAs written separately merge as if they shared one (the
// layout hands the model its VMAs with their anon_vma replaced).
//
// pgoff: mremap of an unfaulted anonymous VMA to a fixed address keeps its
// old pgoff instead of taking the new address (copy_vma without its
// "!vma->anon_vma" reset): the source VMAs are given a stand-in anon_vma for
// the length of the call, which copy_vma takes for a faulted VMA's, and
// lose it afterwards.
//
// Neither needs the model to know it is mutated: the layout (vma.Layout) is
// the mutant's own, as skipmax's table is.
package main

import (
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/vma"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mutation is set with -ldflags "-X main.mutation=..." or, in a build
// without it, by $IPCFUZZ_MUTATION (the tests build the mutant once and
// choose the mutation per run).
var mutation string

func main() {
	if mutation == "" {
		mutation = os.Getenv("IPCFUZZ_MUTATION")
	}
	spaces := map[string]func(ops.VMAQuirks) ops.AddressSpace{"anon": newOneAnon, "pgoff": newKeepPgoff}
	newSpace, ok := spaces[mutation]
	if !ok {
		fmt.Fprintf(os.Stderr, "vmamutant: built without a known mutation (%q)\n", mutation)
		os.Exit(2)
	}
	model := impls.Compose(impls.VMAPart(impls.NewVMAModelPart(newSpace)))
	info := model.Describe(ops.Info{Name: "vmamutant-" + mutation, Version: "test", ExactIDs: true})
	plugins.Serve(ops.NewLocal(info, model))
}

// oneAnon is a layout whose VMAs all share one anon_vma once they have
// any: whoever reads a VMA through it sees the shared one.
type oneAnon struct {
	vma.Layout
	shared *vma.AnonVMA
}

func newOneAnon(q ops.VMAQuirks) ops.AddressSpace {
	return vma.New(&oneAnon{Layout: vma.NewTree(), shared: &vma.AnonVMA{ID: -1}}, vma.Rules{Quirks: q, BrkJustExpand: true})
}

func (l *oneAnon) unify() {
	for _, v := range l.Layout.All() {
		if v.Anon != nil {
			v.Anon = l.shared
		}
	}
}

// Find implements vma.Layout.
func (l *oneAnon) Find(addr int64) *vma.VMA { l.unify(); return l.Layout.Find(addr) }

// Before implements vma.Layout.
func (l *oneAnon) Before(addr int64) *vma.VMA { l.unify(); return l.Layout.Before(addr) }

// All implements vma.Layout.
func (l *oneAnon) All() []*vma.VMA { l.unify(); return l.Layout.All() }

// keepPgoff is the optimized space whose fixed mremap keeps the pgoff of
// an unfaulted anonymous source.
type keepPgoff struct {
	*vma.Space
	layout vma.Layout
	// base is the model's page number of page 0 of each region.
	base [2]int64
}

func newKeepPgoff(q ops.VMAQuirks) ops.AddressSpace {
	rules := vma.Rules{Quirks: q, BrkJustExpand: true}
	l := vma.NewTree()
	return &keepPgoff{Space: vma.New(l, rules), layout: l, base: regionBases(rules)}
}

// regionBases finds where the model puts page 0 of the window and of the
// heap area, by mapping it on a scratch space.
func regionBases(rules vma.Rules) [2]int64 {
	var out [2]int64
	for i, op := range []func(*vma.Space) (ops.Errno, error){
		func(s *vma.Space) (ops.Errno, error) {
			return s.Map(ops.VMAArgs{Pages: 1, Prot: ops.ProtRead | ops.ProtWrite})
		},
		func(s *vma.Space) (ops.Errno, error) { return s.Brk(ops.VMAArgs{Break: 1}) },
	} {
		l := vma.NewTree()
		if e, err := op(vma.New(l, rules)); err != nil || e != ops.OK || l.Len() != 1 {
			panic(fmt.Sprintf("vmamutant: probing region %d: %v %v", i, e, err))
		}
		out[i] = l.All()[0].Start
	}
	return out
}

// Remap implements ops.AddressSpace: a fixed move of unfaulted anonymous
// VMAs runs with a stand-in anon_vma on them.
func (k *keepPgoff) Remap(a ops.VMAArgs) (ops.Errno, error) {
	if !a.Fixed {
		return k.Space.Remap(a)
	}
	region := 0
	if a.Heap {
		region = 1
	}
	start := k.base[region] + a.Start
	standIn := &vma.AnonVMA{ID: -1}
	for _, v := range k.layout.All() {
		if v.File == nil && v.Anon == nil && v.Start < start+a.Pages && start < v.End {
			v.Anon = standIn
		}
	}
	e, err := k.Space.Remap(a)
	for _, v := range k.layout.All() {
		if v.Anon == standIn {
			v.Anon = nil
		}
	}
	return e, err
}
