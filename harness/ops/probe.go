package ops

// maxProbes bounds the merge probes of one script (MergeProbes).
const maxProbes = 8

// MergeProbes lists short sequences that observe what a layout cannot: a
// VMA field /proc/PID/maps does not show for anonymous memory (vm_pgoff,
// which decides whether a neighbour merges with it). Each maps one
// anonymous page right after, or right before, a range an operation of
// script made or changed (a map, a protect, a fixed remap's target), with
// that range's protection, or right above a new break, and then takes the
// layout: where the sides' states differ in such a field, the new page
// merges on one side and stays apart on the other. Nearest the end of script first, at most
// maxProbes; none outside the vma subsystem. harness/runner appends them
// to a script's prefixes, as it appends Witnesses, to find the call after
// which the states first differ (a mremap that left the wrong vm_pgoff,
// not the later mapping that fails to merge).
func MergeProbes(sub string, script []Op) [][]Op {
	spec, ok := Subsystem(sub)
	if !ok || !spec.Allows(KindMap) || !spec.Allows(KindLayout) {
		return nil
	}
	var out [][]Op
	type at struct {
		region VMARegion
		page   int64
	}
	seen := map[at]bool{}
	add := func(region VMARegion, page int64, prot VMAProt) {
		key := at{region, page}
		if page < 0 || page >= VMARegionLimit(region) || seen[key] || len(out) == maxProbes {
			return
		}
		probe := Op{Kind: KindMap, VMA: VMAArgs{Start: page, Pages: 1, Prot: prot}}
		probe.VMA.SetRegion(region)
		if Validate(probe) != nil {
			return
		}
		seen[key] = true
		out = append(out, []Op{probe, {Kind: KindLayout}})
	}
	for i := len(script) - 1; i >= 0 && len(out) < maxProbes; i-- {
		op := script[i]
		v := op.VMA
		switch {
		case op.Kind == KindMap && v.File == 0, op.Kind == KindProtect:
			add(v.Region(), v.Start+v.Pages, v.Prot)
			add(v.Region(), v.Start-1, v.Prot)
		case op.Kind == KindBrk && v.Break >= 0:
			// The page above the new break: brk's memory is rw-.
			add(RegionHeap, v.Break+boolPage(v.BreakBytes > 0), ProtRead|ProtWrite)
		case op.Kind == KindRemap && v.Fixed:
			// The page after the moved range meets the VMA its last
			// mapped page moved with (a move may take several VMAs, and
			// holes), the page before it the first page's.
			for p := v.Start + max(min(v.Pages, v.NewPages), 1) - 1; p >= v.Start; p-- {
				if prot, ok := protAt(script[:i], v.Region(), p); ok {
					end := v.Target + p - v.Start + 1
					if p == v.Start+v.Pages-1 {
						end = v.Target + v.NewPages // a resize grows or shrinks the last VMA
					}
					add(v.Region(), end, prot)
					break
				}
			}
			if prot, ok := protAt(script[:i], v.Region(), v.Start); ok {
				add(v.Region(), v.Target-1, prot)
			}
		}
	}
	return out
}

// boolPage is 1 for true: a break with bytes more ends a page higher.
func boolPage(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// protAt is the protection the last map or protect of script gave page
// of a region, if one did.
func protAt(script []Op, region VMARegion, page int64) (VMAProt, bool) {
	for i := len(script) - 1; i >= 0; i-- {
		v := script[i].VMA
		if (script[i].Kind == KindMap || script[i].Kind == KindProtect) && v.Region() == region && v.Start <= page && page < v.Start+v.Pages {
			return v.Prot, true
		}
	}
	return 0, false
}
