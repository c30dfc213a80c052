package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Render writes the file text of a finding (the format Finding
// describes). The body states the results of the side f.Stated names,
// where it has them.
func Render(f *Finding) string {
	var b strings.Builder
	h := f.Header
	a, bn := firstOf(h.A, f.A.Name), firstOf(h.B, f.B.Name)
	line := WriteHeader(&b, h, h.Kind, a, firstOf(h.AInfo, f.A.Info), bn, firstOf(h.BInfo, f.B.Info))
	stated := f.side(h.Stated)
	if stated != nil {
		line("stated", h.Stated)
	} else if h.Kind != "" {
		line("stated", "none")
	}
	line("stderr", h.Stderr)
	if h.Flaky {
		line("flaky", "yes")
	}
	for _, n := range f.Notes {
		line("note", n)
	}
	script := f.Script
	if stated != nil {
		script = withResults(f.Script, stated.Results)
		otherOf := map[string]string{"A": "B", "B": "A"}[h.Stated]
		b.WriteString(otherLines(f.Script.Ops(), otherOf, stated.Results, f.side(otherOf).Results))
	}
	for _, g := range f.Final {
		fmt.Fprintf(&b, "# final %s of A:\n%s", g.Name, indent(g.A))
		fmt.Fprintf(&b, "# final %s of B:\n%s", g.Name, indent(g.B))
	}
	if f.A.Results != nil || f.B.Results != nil {
		b.WriteString("#\n")
		b.WriteString(SideBySide(f.Script.Ops(), Side{Name: a, Results: f.A.Results}, Side{Name: bn, Results: f.B.Results}, "# "))
	}
	b.WriteString(ops.Format(script))
	return b.String()
}

// WriteHeader writes the lines every finding file begins with, the kind
// and format, then how, where and when it was found, its sides (a and b,
// each with its plugin's description), kernel, facts, signature and hits,
// each line only when it has a value; it returns the writer of one more
// "# key: value" line (one line, whatever the value holds).
func WriteHeader(b *strings.Builder, h Header, kind, a, aInfo, bName, bInfo string) func(key, value string) {
	fmt.Fprintf(b, "# ipcfuzz %s\n", kind)
	fmt.Fprintf(b, "# format: %d\n", FormatVersion)
	line := func(key, value string) {
		if value != "" {
			fmt.Fprintf(b, "# %s: %s\n", key, strings.ReplaceAll(strings.TrimSpace(value), "\n", "; "))
		}
	}
	line("version", h.Version)
	line("revision", h.Revision)
	line("date", h.Date)
	line("command", h.Command)
	if h.HasSeed {
		line("seed", fmt.Sprint(h.Seed))
		line("script", fmt.Sprintf("%d (script seed %d)", h.Index, h.ScriptSeed))
	}
	line("engine", h.Engine)
	line("relation", h.Relation)
	line("side A", sideText(a, aInfo))
	line("side B", sideText(bName, bInfo))
	line("kernel", h.Kernel)
	line("facts", h.Facts)
	line("signature", h.Signature)
	if h.Hits > 0 {
		line("hits", fmt.Sprint(h.Hits))
	}
	return line
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sideText(spec, info string) string {
	if info == "" || spec == "" {
		return spec
	}
	return spec + " (" + info + ")"
}

// withResults is sc with each step stating its result in rs (and no
// result beyond rs).
func withResults(sc *ops.Script, rs []ops.Result) *ops.Script {
	out := &ops.Script{Subsystem: sc.Subsystem, Steps: make([]ops.Step, len(sc.Steps))}
	for i, st := range sc.Steps {
		out.Steps[i] = ops.Step{Op: st.Op}
		if i < len(rs) {
			r := rs[i]
			out.Steps[i].Want = &r
		}
	}
	return out
}

// otherLines states the other side's results where they differ from the
// stated ones.
func otherLines(script []ops.Op, letter string, stated, other []ops.Result) string {
	var b strings.Builder
	for i, op := range script {
		switch {
		case i >= len(other) && i < len(stated):
			fmt.Fprintf(&b, "# %s step %d: no result\n", letter, i+1)
			return b.String()
		case i >= len(other):
			return b.String()
		case i >= len(stated) || ops.FormatResult(op, stated[i]) != ops.FormatResult(op, other[i]):
			fmt.Fprintf(&b, "# %s step %d -> %s\n", letter, i+1, ops.FormatResult(op, other[i]))
		}
	}
	return b.String()
}

// indent comments out a final state's lines, indented.
func indent(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("#   " + l + "\n")
	}
	return b.String()
}

// SideBySide shows each operation with both sides' results, marking the
// lines where they differ, each line starting with prefix.
func SideBySide(script []ops.Op, a, b Side, prefix string) string {
	width := len(a.Name)
	for i, op := range script {
		if i < len(a.Results) {
			width = max(width, len(ops.FormatResult(op, a.Results[i])))
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%4s  %-*s  %s\n", prefix, "step", width, "A: "+a.Name, "B: "+b.Name)
	for i, op := range script {
		ra, rb := "-", "-"
		if i < len(a.Results) {
			ra = ops.FormatResult(op, a.Results[i])
		}
		if i < len(b.Results) {
			rb = ops.FormatResult(op, b.Results[i])
		}
		mark := " "
		if ra != rb {
			mark = "*"
		}
		fmt.Fprintf(&sb, "%s%3d%s  %-*s  %-*s  %s\n", prefix, i+1, mark, width, ra, width, rb, ops.FormatOp(op))
	}
	return sb.String()
}

// maxNamePart bounds each part of a finding's file name.
const maxNamePart = 48

// BaseName is the name, without the extension, a finding is stored under:
// what makes it distinct, the signature (without its subsystem) and the
// pair, then the hash of its operations. Two runs on different pairs that
// find the same script keep two files.
func BaseName(f *Finding) string {
	sig := f.Signature
	if sub := f.Script.Subsystem + "/"; strings.HasPrefix(sig, sub) {
		sig = sig[len(sub):]
	}
	if sig == "" {
		sig = strings.ReplaceAll(f.Kind, " ", "-")
	}
	parts := []string{slug(sig), sideSlug(firstOf(f.Header.A, f.A.Name)), sideSlug(firstOf(f.Header.B, f.B.Name)), OpsHash(f.Script)}
	return strings.Join(parts, "~")
}

// sideSlug names a side in a file name: a built-in as given, a plugin
// path by its base name and a hash of the whole path.
func sideSlug(spec string) string {
	if !strings.Contains(spec, "/") {
		return slug(spec)
	}
	sum := sha256.Sum256([]byte(spec))
	return slug(filepath.Base(spec)) + "-" + hex.EncodeToString(sum[:3])
}

// slug keeps a name to letters, digits and ".=,+-", other bytes turned into
// '_', at most maxNamePart bytes (a longer one ends with a hash of all of it).
func slug(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".=,+-", c) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	if b[0] == '.' {
		b[0] = '_' // never a hidden file
	}
	if len(b) > maxNamePart {
		sum := sha256.Sum256([]byte(s))
		return string(b[:maxNamePart-9]) + "-" + hex.EncodeToString(sum[:4])
	}
	return string(b)
}

// OpsHash is the first 12 hex digits of the SHA-256 of a script's
// operations in canonical text, whatever results it states.
func OpsHash(sc *ops.Script) string {
	return Hash(ops.NewScript(sc.Subsystem, sc.Ops()))
}

// StderrExt ends the name of the file that holds a failing plugin's whole
// stderr, beside its finding.
const StderrExt = ".stderr"

// Store writes a finding under dir/<subsystem>/ and returns its path. The
// name says what makes the finding distinct (BaseName); an existing file is
// never replaced: a second record of the same name gets "-2", "-3", ...
// Each file is written whole or not at all (a temporary file, then a link
// or a rename). stderr, when not empty, is written beside it as
// PATH.stderr, which the header names.
func Store(dir string, f *Finding, stderr string) (string, error) {
	sub := f.Script.Subsystem
	if sub == "" {
		sub = "misc"
	}
	subdir := filepath.Join(dir, sub)
	if err := os.MkdirAll(subdir, 0o755); err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	base := BaseName(f)
	for n := 1; n <= 1000; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		path := filepath.Join(subdir, name+Ext)
		g := *f
		if stderr != "" {
			g.Stderr = name + Ext + StderrExt
		}
		created, err := createAtomic(path, []byte(Render(&g)), 0o644)
		if err != nil {
			return "", fmt.Errorf("corpus: %w", err)
		}
		if !created {
			continue
		}
		if stderr != "" {
			if err := WriteFileAtomic(path+StderrExt, []byte(stderr), 0o644); err != nil {
				return path, fmt.Errorf("corpus: %w", err)
			}
		}
		return path, nil
	}
	return "", fmt.Errorf("corpus: %s: a thousand findings of that name already", filepath.Join(subdir, base+Ext))
}

// Rewrite replaces the file of a finding this run stored (to give it its
// final hit count), as one step.
func Rewrite(path string, f *Finding) error {
	if f.Stderr == "" {
		if _, err := os.Stat(path + StderrExt); err == nil {
			f.Stderr = filepath.Base(path) + StderrExt
		}
	}
	if err := WriteFileAtomic(path, []byte(Render(f)), 0o644); err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	return nil
}
