package cover

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// DefaultFiles are the kernel sources ipcfuzz speaks to: the System V IPC
// code and the VMA code. A pattern is matched with path.Match against a
// compilation unit's name relative to its build directory.
var DefaultFiles = []string{
	"ipc/*.c",
	"mm/mmap.c", "mm/vma.c", "mm/mremap.c", "mm/mprotect.c",
	"mm/mlock.c", "mm/madvise.c", "mm/mseal.c",
}

// traceFunc is the function every block instrumented for KCOV calls first
// (-fsanitize-coverage=trace-pc); KCOV records the address it returns to.
const traceFunc = "__sanitizer_cov_trace_pc"

// Site is one instrumented block: a call of __sanitizer_cov_trace_pc.
type Site struct {
	// Ret is the address the call returns to: what KCOV records.
	Ret uint64
	// Call is the address of the call instruction.
	Call uint64
	// File and Line are the call's source line (from the line table; a
	// header's line where the block was inlined from one).
	File string
	Line int
	// Func is the function (ELF symbol) the call is in.
	Func string
}

// Func is one function of the files covered.
type Func struct {
	Name      string
	File      string // the compilation unit's source
	Low, High uint64 // [Low, High)
	Line      int    // first line of its code in File (0: unknown)
	Sites     []int  // indexes into Image.Sites, by address
	firstRow  int    // rows[firstRow:lastRow] lie in the function
	lastRow   int
}

// row is one line table row of a covered unit: code at Addr (up to the
// next row) belongs to File:Line.
type row struct {
	Addr uint64
	File string
	Line int
}

// Image is what a vmlinux says of the files covered: their functions, the
// instrumented blocks in them and the line of each, and where each file's
// source was built (for the HTML view). It knows nothing of a run.
type Image struct {
	Path  string
	Funcs []Func // by address
	Sites []Site // by address
	// Units are the covered compilation units' sources, relative to
	// the build directory, sorted.
	Units []string
	// BuildDir is where the kernel was built (the units' DW_AT_comp_dir).
	BuildDir string

	byRet map[uint64]int // Site.Ret -> index
	rows  []row          // every row of the covered functions, by address
	// governing are, for each line with code in a covered function, the
	// sites whose blocks hold some of that code (the site before the
	// code in its function, or the function's first).
	governing map[FileLine][]int
	// unreached explains the functions no operation can enter
	// (unreached.tsv).
	unreached []unreachable
}

// Open reads vmlinux: the compilation units whose source matches one of
// files (DefaultFiles when nil), their functions, and every call of
// __sanitizer_cov_trace_pc in them. It fails, saying why, on a kernel
// built without KCOV or without line tables.
func Open(vmlinux string, files []string) (*Image, error) {
	if files == nil {
		files = DefaultFiles
	}
	f, err := elf.Open(vmlinux)
	if err != nil {
		return nil, fmt.Errorf("cover: %w", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("cover: %s: reading its symbols: %w", vmlinux, err)
	}
	var trace uint64
	for _, s := range syms {
		if s.Name == traceFunc && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			trace = s.Value
		}
	}
	if trace == 0 {
		return nil, fmt.Errorf("cover: %s has no %s: a kernel built without CONFIG_KCOV (ci/kernel.sh --cover builds one)", vmlinux, traceFunc)
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("cover: %s has no DWARF line tables: a kernel built without CONFIG_DEBUG_INFO (ci/kernel.sh --cover builds one): %w", vmlinux, err)
	}
	im := &Image{Path: vmlinux, byRet: map[uint64]int{}}
	units, err := im.readUnits(d, files)
	if err != nil {
		return nil, fmt.Errorf("cover: %s: %w", vmlinux, err)
	}
	if len(units) == 0 {
		return nil, fmt.Errorf("cover: %s: no compilation unit matches %s", vmlinux, strings.Join(files, " "))
	}
	im.funcs(syms, units)
	text := f.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("cover: %s has no .text", vmlinux)
	}
	code, err := text.Data()
	if err != nil {
		return nil, fmt.Errorf("cover: %s: reading .text: %w", vmlinux, err)
	}
	im.findSites(code, text.Addr, trace)
	im.govern()
	if im.unreached, err = parseUnreached(unreachedTSV); err != nil {
		return nil, fmt.Errorf("cover: %w", err)
	}
	return im, nil
}

// govern fills im.governing.
func (im *Image) govern() {
	im.governing = map[FileLine][]int{}
	for _, fn := range im.Funcs {
		if len(fn.Sites) == 0 {
			continue
		}
		k := 0
		for _, rw := range im.rows[fn.firstRow:fn.lastRow] {
			if rw.Line == 0 {
				continue
			}
			for k+1 < len(fn.Sites) && im.Sites[fn.Sites[k+1]].Call <= rw.Addr {
				k++
			}
			fl := FileLine{rw.File, rw.Line}
			si := fn.Sites[k]
			if g := im.governing[fl]; len(g) == 0 || g[len(g)-1] != si {
				im.governing[fl] = append(g, si)
			}
		}
	}
}

// unit is one covered compilation unit: its source and address ranges.
type unit struct {
	source string
	ranges [][2]uint64
}

// readUnits finds the compilation units of files and reads their line
// tables into im.rows.
func (im *Image) readUnits(d *dwarf.Data, files []string) ([]unit, error) {
	var units []unit
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("reading DWARF: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		r.SkipChildren()
		name, _ := e.Val(dwarf.AttrName).(string)
		dir, _ := e.Val(dwarf.AttrCompDir).(string)
		source := relTo(name, dir)
		if !matchAny(files, source) {
			continue
		}
		if im.BuildDir == "" {
			im.BuildDir = dir
		}
		ranges, err := d.Ranges(e)
		if err != nil {
			return nil, fmt.Errorf("the ranges of %s: %w", source, err)
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			return nil, fmt.Errorf("the line table of %s: %v", source, err)
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("the line table of %s: %w", source, err)
			}
			if le.EndSequence || le.File == nil {
				continue
			}
			im.rows = append(im.rows, row{Addr: le.Address, File: relTo(le.File.Name, dir), Line: le.Line})
		}
		units = append(units, unit{source: source, ranges: ranges})
		im.Units = append(im.Units, source)
	}
	sort.SliceStable(im.rows, func(i, j int) bool { return im.rows[i].Addr < im.rows[j].Addr })
	sort.Strings(im.Units)
	return units, nil
}

// funcs takes the function symbols that lie in the units' ranges.
func (im *Image) funcs(syms []elf.Symbol, units []unit) {
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		for _, u := range units {
			if inRanges(u.ranges, s.Value) {
				im.Funcs = append(im.Funcs, Func{Name: s.Name, File: u.source, Low: s.Value, High: s.Value + s.Size})
				break
			}
		}
	}
	// One function per address: an alias (a second symbol of the same
	// code) would count its blocks twice. The longest, then the first
	// name in order, stays.
	sort.Slice(im.Funcs, func(i, j int) bool {
		a, b := im.Funcs[i], im.Funcs[j]
		if a.Low != b.Low {
			return a.Low < b.Low
		}
		if a.High != b.High {
			return a.High > b.High
		}
		return a.Name < b.Name
	})
	im.Funcs = slices.CompactFunc(im.Funcs, func(a, b Func) bool { return a.Low == b.Low })
	for i := range im.Funcs {
		fn := &im.Funcs[i]
		fn.firstRow = sort.Search(len(im.rows), func(k int) bool { return im.rows[k].Addr >= fn.Low })
		fn.lastRow = sort.Search(len(im.rows), func(k int) bool { return im.rows[k].Addr >= fn.High })
		for _, rw := range im.rows[fn.firstRow:fn.lastRow] {
			if rw.File == fn.File && rw.Line > 0 && (fn.Line == 0 || rw.Line < fn.Line) {
				fn.Line = rw.Line
			}
		}
	}
}

// findSites disassembles every covered function and records its calls of
// the trace function.
func (im *Image) findSites(code []byte, base, trace uint64) {
	for fi := range im.Funcs {
		fn := &im.Funcs[fi]
		if fn.Low < base || fn.High > base+uint64(len(code)) {
			continue
		}
		b := code[fn.Low-base : fn.High-base]
		for off := 0; off < len(b); {
			inst, err := x86asm.Decode(b[off:], 64)
			if err != nil || inst.Len == 0 {
				off++
				continue
			}
			at := fn.Low + uint64(off)
			off += inst.Len
			if inst.Op != x86asm.CALL {
				continue
			}
			rel, ok := inst.Args[0].(x86asm.Rel)
			if !ok || at+uint64(inst.Len)+uint64(int64(rel)) != trace {
				continue
			}
			file, line := im.lineAt(at)
			s := Site{Ret: at + uint64(inst.Len), Call: at, File: file, Line: line, Func: fn.Name}
			im.byRet[s.Ret] = len(im.Sites)
			fn.Sites = append(fn.Sites, len(im.Sites))
			im.Sites = append(im.Sites, s)
		}
	}
}

// lineAt is the source line of the code at addr: the last row at or
// before it.
func (im *Image) lineAt(addr uint64) (string, int) {
	i := sort.Search(len(im.rows), func(k int) bool { return im.rows[k].Addr > addr }) - 1
	if i < 0 {
		return "", 0
	}
	return im.rows[i].File, im.rows[i].Line
}

// relTo is name relative to dir when it lies under it, cleaned.
func relTo(name, dir string) string {
	if !filepath.IsAbs(name) {
		return path.Clean(name)
	}
	if dir != "" {
		if rel, err := filepath.Rel(dir, name); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path.Clean(name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func inRanges(ranges [][2]uint64, a uint64) bool {
	for _, r := range ranges {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}
