package impls

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// RemapOrderOption is the option of a model's VMA part that picks mremap's
// order of checks: "auto" follows the other side's kernel (its vma_quirks
// fact has remap-lookup-first on 6.1), else 6.18's order; "checks-first"
// is 6.18's (every argument checked before anything is unmapped);
// "lookup-first" is 6.1's (the source looked up first; a fixed move unmaps
// its target before it checks the source range).
var RemapOrderOption = ops.OptionSpec{Name: OptionRemapOrder, Values: []string{RemapOrderAuto, RemapOrderChecksFirst, RemapOrderLookupFirst},
	Doc: "mremap's order of checks: the other side's kernel's, 6.18's or 6.1's"}

// The remap_order option's name and values.
const (
	OptionRemapOrder      = "remap_order"
	RemapOrderAuto        = "auto"
	RemapOrderChecksFirst = "checks-first"
	RemapOrderLookupFirst = "lookup-first"
)

// vmaModelOptions are the options of a model's VMA part.
var vmaModelOptions = ops.OptionSpecs{RemapOrderOption}

// withRemapOrder is q with the remap-lookup-first quirk the remap_order
// option asks for ("auto" or none: q as it is).
func withRemapOrder(q ops.VMAQuirks, options map[string]string) ops.VMAQuirks {
	switch options[OptionRemapOrder] {
	case RemapOrderChecksFirst:
		return q &^ ops.QuirkRemapLookupFirst
	case RemapOrderLookupFirst:
		return q | ops.QuirkRemapLookupFirst
	}
	return q
}
