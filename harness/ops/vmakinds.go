package ops

import (
	"fmt"
	"strconv"
	"strings"
)

// Operations of the vma subsystem: one process's address space, in pages of
// the window ("w:") or of the heap area ("h:"); see vma.go. Every operation
// returns its errno; the observable is the snapshot's VMA group.
const (
	// KindMap is mmap(MAP_FIXED) of a range, anonymous or of a file handle.
	KindMap Kind = 64 + iota
	// KindUnmap is munmap of a range.
	KindUnmap
	// KindProtect is mprotect of a range.
	KindProtect
	// KindTouch reads or writes one page.
	KindTouch
	// KindAdvise is madvise of a range.
	KindAdvise
	// KindLock is mlock (or mlock2 MLOCK_ONFAULT) of a range.
	KindLock
	// KindUnlock is munlock of a range.
	KindUnlock
	// KindRemap is mremap of a range to a new length, in place or to a
	// fixed target.
	KindRemap
	// KindBrk moves the program break.
	KindBrk
	// KindOpen opens a new file (a handle fN of its own).
	KindOpen
	// KindReopen opens the file behind a handle again (a new open file
	// description of the same file).
	KindReopen
	// KindDup duplicates a handle (the same open file description).
	KindDup
	// KindLayout observes the address space: its result is every VMA and
	// the break at that step, so a script states the layout after any
	// step, not only at its end.
	KindLayout
	// KindFork forks the process: the script carries on in the child, whose
	// address space is the parent's copy (VM_DONTCOPY VMAs left out, every
	// faulted VMA a fork child); the parent exits.
	KindFork
)

// KindSeal is mseal of a range (Linux 6.10): the VMAs get VM_SEALED, and
// munmap, mprotect, mremap, MAP_FIXED over them and the discarding advices
// on read-only anonymous memory refuse them with EPERM. Its number stands
// apart from the list above so that kinds added there do not move it.
const KindSeal Kind = 90

// KindMemlock limits the process's locked memory to VMA.Limit pages
// (setrlimit(RLIMIT_MEMLOCK)) and takes CAP_IPC_LOCK out of its effective
// capabilities, so that mlock (EPERM under a limit of 0, ENOMEM above
// it), mmap(MAP_LOCKED) (EPERM, EAGAIN) and mremap's growth of a locked
// VMA (EAGAIN) meet the limit, as they do for a process that is not root.
// A fork's child keeps both; a reset restores them. Its number stands
// apart, as KindSeal's does.
const KindMemlock Kind = 91

// rangeField writes and reads a range "w:S+P" (window), "h:S+P" (heap
// area) or "t:S+P" (THP area); with pages false, one page "w:S".
type rangeField struct{ pages bool }

func (f rangeField) format(o *Op) string {
	s := regionPrefix(o.VMA.Region()) + strconv.FormatInt(o.VMA.Start, 10)
	if f.pages {
		s += "+" + strconv.FormatInt(o.VMA.Pages, 10)
	}
	return s
}

func regionPrefix(r VMARegion) string {
	switch r {
	case RegionHeap:
		return "h:"
	case RegionTHP:
		return "t:"
	case regionBoth:
		return "h+t:"
	}
	return "w:"
}

func (f rangeField) parse(o *Op, text string) error {
	region, rest, ok := strings.Cut(text, ":")
	if !ok || (region != "w" && region != "h" && region != "t") {
		return fmt.Errorf("range %q: want w:START+PAGES (window), h:START+PAGES (heap area) or t:START+PAGES (THP area)", clip(text))
	}
	o.VMA.Heap, o.VMA.THP = region == "h", region == "t"
	start, pages := rest, "1"
	if f.pages {
		if start, pages, ok = strings.Cut(rest, "+"); !ok {
			return fmt.Errorf("range %q: want %s:START+PAGES", clip(text), region)
		}
	}
	s, err1 := strconv.ParseInt(start, 10, 64)
	p, err2 := strconv.ParseInt(pages, 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("range %q: want %s:START+PAGES with decimal numbers", clip(text), region)
	}
	o.VMA.Start, o.VMA.Pages = s, p
	if !f.pages {
		o.VMA.Pages = 0
	}
	return nil
}

func (f rangeField) zero(o *Op) bool { return false }

func (f rangeField) syntax() string {
	if f.pages {
		return "w:START+PAGES|h:START+PAGES"
	}
	return "w:PAGE|h:PAGE"
}

// plainer moves a range to the start of its region and shrinks it to a
// page.
// plainer offers, for the start and for the pages, the plain value (0, 1)
// then points halfway toward it, a quarter of the way, ... and one step
// away, as a number's plainer does: a range of the THP area (hundreds of
// pages) shrinks in a few steps, not one page at a time.
func (f rangeField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	for _, c := range towards(o.VMA.Start, 0) {
		out = append(out, func(o *Op) { o.VMA.Start = c })
	}
	if f.pages {
		for _, c := range towards(o.VMA.Pages, 1) {
			out = append(out, func(o *Op) { o.VMA.Pages = c })
		}
	}
	return out
}

// towards lists the values from plain toward v (above it): plain, v less
// half the way, less a quarter, ..., v-1.
func towards(v, plain int64) []int64 {
	if v <= plain {
		return nil
	}
	out := []int64{plain}
	for step := (v - plain) / 2; step > 1; step /= 2 {
		out = append(out, v-step)
	}
	if v-1 != plain {
		out = append(out, v-1)
	}
	return out
}

// protField is a protection "rw-".
type protField struct{}

func (protField) format(o *Op) string { return o.VMA.Prot.String() }

func (protField) parse(o *Op, text string) error {
	p, err := ParseVMAProt(text)
	o.VMA.Prot = p
	return err
}

func (protField) zero(o *Op) bool { return o.VMA.Prot == 0 }

func (protField) syntax() string { return "[r-][w-][x-]" }

func (protField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	for _, bit := range []VMAProt{ProtExec, ProtWrite} {
		if o.VMA.Prot&bit != 0 {
			out = append(out, func(o *Op) { o.VMA.Prot &^= bit })
		}
	}
	return out
}

// adviceField is an advice name.
type adviceField struct{}

func (adviceField) format(o *Op) string { return o.VMA.Advice.String() }

func (adviceField) parse(o *Op, text string) error {
	a, err := ParseVMAAdvice(text)
	o.VMA.Advice = a
	return err
}

func (adviceField) zero(o *Op) bool { return o.VMA.Advice == 0 }

func (adviceField) syntax() string {
	var names []string
	for _, a := range VMAAdvices {
		names = append(names, a.String())
	}
	return strings.Join(names, "|")
}

// plainer lists every advice before this one in VMAAdvices, first first:
// a shrunk finding keeps the first advice that still shows it, so one bug
// that several advices reach (a seal that refuses willneed, pageout and
// dontdump) shrinks to one script and one cause.
func (adviceField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	for _, a := range VMAAdvices {
		if a == o.VMA.Advice {
			break
		}
		out = append(out, func(o *Op) { o.VMA.Advice = a })
	}
	return out
}

func checkVMA(op Op) error { return CheckVMAArgs(op.VMA) }

func checkVMAFile(op Op) error {
	return CheckVMAFileArgs(VMAFileArgs{Handle: max(op.Bind, 1), Of: op.VFile.Of, ReadOnly: op.VFile.ReadOnly})
}

// VFileArgs are the file handle arguments of Reopen and Dup beyond the
// handle they bind (Op.Bind).
type VFileArgs struct {
	Of       int  // the handle reopened or duplicated
	ReadOnly bool // open, reopen: O_RDONLY
}

// FileArgs returns the file arguments of an open, reopen or dup as the
// AddressSpace takes them.
func (op Op) FileArgs() VMAFileArgs {
	return VMAFileArgs{Handle: op.Bind, Of: op.VFile.Of, ReadOnly: op.VFile.ReadOnly}
}

func init() {
	mapFlag := func(name string, bit VMAMapFlags) Arg {
		return flagBit(name, func(o *Op) *VMAMapFlags { return &o.VMA.Flags }, bit)
	}
	pages := func(name string, p func(*Op) *int64) Arg {
		return named(name, dec(p, 0, VMAMemlockMax, 0))
	}
	rng := pos(rangeField{pages: true})
	registerSnapshotPart(snapshotPart{rank: 50, name: "vma", subsystem: "vma", format: func(s *Snapshot, b *strings.Builder) {
		b.WriteString(FormatVMAState(s.VMA))
	}})
	register(SubsystemSpec{Name: "vma", Uses: []string{"vma"}},
		KindSpec{Kind: KindMap, Name: "map", Doc: "mmap(MAP_FIXED) of PAGES pages at START of the window (w:), heap area (h:) or THP area (t:), anonymous or of a file fN at page offset off=", Subsystem: "vma",
			Args: []Arg{rng, pos(protField{}),
				mapFlag("shared", MapShared), mapFlag("noreserve", MapNoReserve), mapFlag("populate", MapPopulate),
				mapFlag("locked", MapLocked), mapFlag("stack", MapStack),
				handleOf(ClassFile, "file", func(o *Op) *int { return &o.VMA.File }).Optional(),
				named("off", dec(func(o *Op) *int64 { return &o.VMA.Offset }, 0, VMAFileOffsetMax, 0)).Optional(),
			},
			Check: checkVMA},
		KindSpec{Kind: KindUnmap, Name: "unmap", Doc: "munmap", Subsystem: "vma", Args: []Arg{rng}, Check: checkVMA},
		KindSpec{Kind: KindProtect, Name: "protect", Doc: "mprotect", Subsystem: "vma", Args: []Arg{rng, pos(protField{})}, Check: checkVMA},
		KindSpec{Kind: KindTouch, Name: "touch", Doc: "fault one page in, reading or (write) writing", Subsystem: "vma",
			Args:  []Arg{pos(rangeField{}), flagBool("write", func(o *Op) *bool { return &o.VMA.Write })},
			Check: checkVMA},
		KindSpec{Kind: KindAdvise, Name: "advise", Doc: "madvise", Subsystem: "vma", Args: []Arg{rng, pos(adviceField{})}, Check: checkVMA},
		KindSpec{Kind: KindLock, Name: "lock", Doc: "mlock, or mlock2(MLOCK_ONFAULT) with onfault", Subsystem: "vma", CauseName: "mlock",
			Args:  []Arg{rng, flagBool("onfault", func(o *Op) *bool { return &o.VMA.OnFault })},
			Check: checkVMA},
		KindSpec{Kind: KindUnlock, Name: "unlock", Doc: "munlock", Subsystem: "vma", CauseName: "mlock", Args: []Arg{rng}, Check: checkVMA},
		KindSpec{Kind: KindRemap, Name: "remap", Doc: "mremap to new pages, in place, moved (fixed to=PAGE), or where the kernel picks (maymove: the result is at=PAGE, where it landed relative to the window; a range landing below the window is unmapped at once); dontunmap adds MREMAP_DONTUNMAP (the source stays mapped, emptied and unlocked; new must equal the length)", Subsystem: "vma",
			Args: []Arg{rng, pages("new", func(o *Op) *int64 { return &o.VMA.NewPages }),
				flagBool("fixed", func(o *Op) *bool { return &o.VMA.Fixed }),
				pages("to", func(o *Op) *int64 { return &o.VMA.Target }).When(func(o *Op) bool { return o.VMA.Fixed }),
				flagBool("maymove", func(o *Op) *bool { return &o.VMA.MayMove }),
				flagBool("dontunmap", func(o *Op) *bool { return &o.VMA.DontUnmap }),
			},
			Result: byOp(remapResult),
			Check:  checkVMA},
		KindSpec{Kind: KindBrk, Name: "brk", Doc: "brk to N pages above the initial break (negative: below it), and bytes= more (a break not page-aligned, stored as given)", Subsystem: "vma",
			Args: []Arg{pos(dec(func(o *Op) *int64 { return &o.VMA.Break }, -VMABrkBelow, VMAHeapPages, 0)),
				named("bytes", dec(func(o *Op) *int64 { return &o.VMA.BreakBytes }, 0, VMAPageBytes-1, 0)).Optional()},
			Check: checkVMA},
		KindSpec{Kind: KindOpen, Name: "open", Doc: "open a new file; binds fN", Subsystem: "vma", Binds: ClassFile,
			Args:  []Arg{flagBool("rdonly", func(o *Op) *bool { return &o.VFile.ReadOnly })},
			Check: checkVMAFile},
		KindSpec{Kind: KindReopen, Name: "reopen", Doc: "open the file of fN again (a new open file description); binds fN", Subsystem: "vma", Binds: ClassFile,
			Args: []Arg{handleOf(ClassFile, "", func(o *Op) *int { return &o.VFile.Of }),
				flagBool("rdonly", func(o *Op) *bool { return &o.VFile.ReadOnly })},
			Check: checkVMAFile},
		KindSpec{Kind: KindDup, Name: "dup", Doc: "dup of fN (the same open file description); binds fN", Subsystem: "vma", Binds: ClassFile,
			Args:  []Arg{handleOf(ClassFile, "", func(o *Op) *int { return &o.VFile.Of })},
			Check: checkVMAFile},
		KindSpec{Kind: KindSeal, Name: "seal", Doc: "mseal (Linux 6.10+; ENOSYS where the kernel has none): sealed VMAs refuse munmap, mprotect, mremap, MAP_FIXED and discarding advices with EPERM", Subsystem: "vma",
			Args: []Arg{rng}, Check: checkVMA},
		KindSpec{Kind: KindMemlock, Name: "memlock", Doc: "setrlimit(RLIMIT_MEMLOCK) to N pages, and CAP_IPC_LOCK out of the effective capabilities (until the script ends, a fork's child included): mlock, mmap locked and mremap's growth of a locked VMA then meet the limit", Subsystem: "vma",
			Args: []Arg{pos(dec(func(o *Op) *int64 { return &o.VMA.Limit }, 0, VMAMemlockMax, 0))}, Check: checkVMA},
		KindSpec{Kind: KindLayout, Name: "layout", Doc: "observe the address space: the result is the layout now, as the final state shows it ([vma | vma ...] brk=N)", Subsystem: "vma",
			Result: layoutResult{}, Observes: true},
		KindSpec{Kind: KindFork, Name: "fork", Doc: "fork: the script carries on in the child (dontcopy VMAs left out, faulted VMAs become fork children, mlock not inherited, wipeonfork VMAs wiped); the parent exits", Subsystem: "vma"},
	)
}

// layoutResult is the result of a layout: "[VMA | VMA ...] brk=N", each VMA
// as FormatVMA writes it.
type layoutResult struct{}

func (layoutResult) format(_ *Op, r *Result) string {
	parts := make([]string, len(r.Layout.VMAs))
	for i, v := range r.Layout.VMAs {
		parts[i] = FormatVMA(v)
	}
	return bracketList(parts, " | ") + " brk=" + formatBrk(r.Layout.Brk, r.Layout.BrkBytes)
}

func (layoutResult) parse(_ *Op, r *Result, text string) error {
	inner, ok := strings.CutPrefix(text, "[")
	inner, brk, ok2 := strings.Cut(inner, "] brk=")
	if !ok || !ok2 {
		return fmt.Errorf("layout result %q: want [VMA | VMA ...] brk=N", clip(text))
	}
	n, b, err := parseBrk(brk)
	if err != nil {
		return fmt.Errorf("layout result %q: %w", clip(text), err)
	}
	r.Layout.Brk, r.Layout.BrkBytes = n, b
	if strings.TrimSpace(inner) == "" {
		return nil
	}
	for _, part := range strings.Split(inner, "|") {
		v, err := ParseVMA(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		r.Layout.VMAs = append(r.Layout.VMAs, v)
	}
	return nil
}

// remapResult is a remap's result: where the range is now (at=PAGE of the
// window, negative below it) for maymove, else only ok.
func remapResult(op *Op) ResultForm {
	if !op.VMA.MayMove {
		return okResult{}
	}
	return fieldsResult{{"at", dec(func(r *Result) *int64 { return &r.ID }, -VMAWindowPages, VMAWindowPages, 0)}}
}
