package cover

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// unreachedTSV explains the functions of the covered files that no
// operation ipcfuzz speaks can enter: "FILE<TAB>FUNCTION-REGEXP<TAB>WHY",
// one per line, # for comments. The regexp matches the whole symbol
// name (a compiler's .part.N or .constprop.N suffix included).
//
//go:embed unreached.tsv
var unreachedTSV string

// unreachable is a parsed line of unreached.tsv.
type unreachable struct {
	file string
	fn   *regexp.Regexp
	why  string
}

// parseUnreached reads unreached.tsv; a bad line is a programming error
// (the file is embedded, and a test reads it).
func parseUnreached(text string) ([]unreachable, error) {
	var out []unreachable
	for i, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("unreached.tsv:%d: want FILE<TAB>FUNCTION-REGEXP<TAB>WHY", i+1)
		}
		re, err := regexp.Compile("^(?:" + f[1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("unreached.tsv:%d: %w", i+1, err)
		}
		out = append(out, unreachable{file: f[0], fn: re, why: f[2]})
	}
	return out, nil
}

// why is the reason no operation ipcfuzz speaks enters fn of file, or "".
func why(us []unreachable, file, fn string) string {
	for _, u := range us {
		if u.file == file && u.fn.MatchString(fn) {
			return u.why
		}
	}
	return ""
}

// explain marks the functions never entered that unreached.tsv explains
// (FuncStat.Why) and counts the others: Reachable, the functions not so
// explained, entered or not, and ReachableLines, their lines.
func (r *Report) explain(us []unreachable) {
	r.Reachable, r.ReachableLines = Stat{}, Stat{}
	for i := range r.Funcs {
		f := &r.Funcs[i]
		if !f.Entered {
			f.Why = why(us, f.File, f.Name)
		}
		if f.Why != "" {
			continue
		}
		r.Reachable.add(f.Entered)
		r.ReachableLines.Reached += f.Lines.Reached
		r.ReachableLines.Total += f.Lines.Total
	}
}
