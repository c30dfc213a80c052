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

// RulesOption is the option of a model's VMA part that picks the kernel
// whose VMA rules it follows: "auto" those of the other side's kernel (its
// vma_quirks fact), else 6.18's; "6.1", "6.12" or "6.18" that version's
// (ops.VMAQuirksOf), with the configuration quirks (ops.VMAQuirksConfig:
// soft-dirty, protection keys, KSM, THP, swap) of the other side's kernel where
// it reports them.
var RulesOption = ops.OptionSpec{Name: OptionRules, Values: []string{RulesAuto, "6.1", "6.12", "6.18"},
	Doc: "the VMA rules followed: the other side's kernel's, or those of 6.1, 6.12 or 6.18"}

// The vma_rules option's name and default value.
const (
	OptionRules = "vma_rules"
	RulesAuto   = "auto"
)

// vmaModelOptions are the options of a model's VMA part.
var vmaModelOptions = ops.OptionSpecs{RulesOption, RemapOrderOption}

// withRules is the quirks the vma_rules option asks for, given the other
// side's (other, known) or 6.18's when it reports none.
func withRules(other ops.VMAQuirks, known bool, options map[string]string) ops.VMAQuirks {
	q, ok := ops.VMAQuirksOf(options[OptionRules])
	switch {
	case !ok && known:
		return other
	case !ok:
		return ops.VMAQuirksLinux618
	case known:
		return q&^ops.VMAQuirksConfig | other&ops.VMAQuirksConfig
	}
	return q
}

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
