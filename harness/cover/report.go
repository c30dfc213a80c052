package cover

import (
	"fmt"
	"io"
	"sort"
)

// Stat is a count of what was reached out of what could be.
type Stat struct {
	Reached, Total int
}

// Percent is Reached out of Total in percent (0 when Total is 0).
func (s Stat) Percent() float64 {
	if s.Total == 0 {
		return 0
	}
	return 100 * float64(s.Reached) / float64(s.Total)
}

func (s Stat) String() string {
	return fmt.Sprintf("%d/%d (%.1f%%)", s.Reached, s.Total, s.Percent())
}

func (s *Stat) add(reached bool) {
	s.Total++
	if reached {
		s.Reached++
	}
}

// FileStat is one source file's coverage: its instrumented lines (a line
// with at least one instrumented block) and its functions (entered: one of
// their blocks ran).
type FileStat struct {
	File  string
	Lines Stat
	Funcs Stat
}

// FuncStat is one function's coverage: the lines of its instrumented
// blocks (a header's line where a block was inlined from one).
type FuncStat struct {
	Name    string
	File    string
	Line    int
	Lines   Stat
	Entered bool
	// Why no operation ipcfuzz speaks enters it, for one never entered
	// that unreached.tsv explains ("" otherwise).
	Why string
}

// Report is a run's coverage of an Image's files.
type Report struct {
	Image *Image
	// Hit says, by index of Image.Sites, which blocks ran.
	Hit []bool
	// Files and Funcs are by name and by file and address.
	Files []FileStat
	Funcs []FuncStat
	// Lines and Funcs summed over the files.
	Lines, Entered Stat
	// Reachable is the functions entered of those unreached.tsv does not
	// explain, and ReachableLines their lines.
	Reachable, ReachableLines Stat
	// PCs is how many distinct program counters the run reported, and
	// Outside how many of them lie outside the covered files.
	PCs, Outside int
}

// FileLine names a line of a source file.
type FileLine struct {
	File string
	Line int
}

// Cover maps the program counters a run reported (KCOV's return addresses,
// in any order, repeats allowed) onto im.
func (im *Image) Cover(pcs []uint64) *Report {
	r := &Report{Image: im, Hit: make([]bool, len(im.Sites))}
	seen := map[uint64]bool{}
	for _, pc := range pcs {
		if seen[pc] {
			continue
		}
		seen[pc] = true
		if i, ok := im.byRet[pc]; ok {
			r.Hit[i] = true
		} else {
			r.Outside++
		}
	}
	r.PCs = len(seen)
	r.tally()
	r.explain(im.unreached)
	return r
}

// tally counts lines and functions.
func (r *Report) tally() {
	im := r.Image
	files := map[string]*FileStat{}
	for _, u := range im.Units {
		files[u] = &FileStat{File: u}
	}
	for fl, reached := range r.lineHits() {
		if fs := files[fl.File]; fs != nil {
			fs.Lines.add(reached)
		}
	}
	for _, fn := range im.Funcs {
		if len(fn.Sites) == 0 {
			continue // no block of its own: nothing to enter
		}
		st := FuncStat{Name: fn.Name, File: fn.File, Line: fn.Line}
		lines := map[FileLine]bool{}
		for _, si := range fn.Sites {
			s := im.Sites[si]
			fl := FileLine{s.File, s.Line}
			lines[fl] = lines[fl] || r.Hit[si]
			st.Entered = st.Entered || r.Hit[si]
		}
		for _, reached := range lines {
			st.Lines.add(reached)
		}
		r.Funcs = append(r.Funcs, st)
		if fs := files[fn.File]; fs != nil {
			fs.Funcs.add(st.Entered)
		}
	}
	for _, u := range im.Units {
		fs := files[u]
		r.Files = append(r.Files, *fs)
		r.Lines.Reached += fs.Lines.Reached
		r.Lines.Total += fs.Lines.Total
		r.Entered.Reached += fs.Funcs.Reached
		r.Entered.Total += fs.Funcs.Total
	}
	sort.SliceStable(r.Funcs, func(i, j int) bool { return r.Funcs[i].File < r.Funcs[j].File })
}

// lineHits is every instrumented line, and whether one of its blocks ran.
func (r *Report) lineHits() map[FileLine]bool {
	out := map[FileLine]bool{}
	for i, s := range r.Image.Sites {
		fl := FileLine{s.File, s.Line}
		out[fl] = out[fl] || r.Hit[i]
	}
	return out
}

// Ran says whether code of fl ran: whether a block holding some of its
// code ran (a line's code belongs to the instrumented block before it in
// its function, or to the function's first block). ok is false for a
// line with no code in the covered functions.
func (r *Report) Ran(fl FileLine) (ran, ok bool) {
	for _, si := range r.Image.governing[fl] {
		ok = true
		if r.Hit[si] {
			return true, true
		}
	}
	return false, ok
}

// Summary is the one-line figure: lines and functions reached.
func (r *Report) Summary() string {
	return fmt.Sprintf("kernel coverage of %d files: lines %s, functions entered %s; of the functions an operation of ipcfuzz can enter: %s entered, their lines %s", len(r.Files), r.Lines, r.Entered, r.Reachable, r.ReachableLines)
}

// WriteText writes the per-file and per-function table.
func (r *Report) WriteText(w io.Writer) error {
	pw := &errWriter{w: w}
	pw.printf("# %s\n# image %s\n\n", r.Summary(), r.Image.Path)
	pw.printf("%-24s %-22s %s\n", "file", "lines", "functions entered")
	for _, f := range r.Files {
		pw.printf("%-24s %-22s %s\n", f.File, f.Lines, f.Funcs)
	}
	pw.printf("\n%-24s %-40s %s\n", "file", "function", "lines")
	for _, f := range r.Funcs {
		mark, why := " ", ""
		switch {
		case f.Why != "":
			mark, why = "-", "  "+f.Why
		case !f.Entered:
			mark = "!"
		}
		pw.printf("%-24s %s%-39s %s%s\n", f.File, mark, f.Name, f.Lines, why)
	}
	return pw.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
