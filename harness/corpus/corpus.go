// Package corpus reads and writes the committed scripts under corpus/: seeds,
// every minimized divergence and every plugin failure ever found. A file is a
// script in canonical text form, with a comment header that says how it was
// found and shows both sides' results side by side.
package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Ext is the extension of script files.
const Ext = ".ops"

// Side is one implementation's name and, when it got that far, its results.
type Side struct {
	Name    string
	Results []ops.Result
}

// Finding is what a file records besides the script.
type Finding struct {
	Kind    string   // "divergence" or "plugin failure"
	Command string   // the command that found it
	Notes   []string // one line each (where it diverged, the error, ...)
	A, B    Side
}

// Render writes the file text of a finding.
func Render(sc *ops.Script, f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ipcfuzz %s\n", f.Kind)
	if f.Command != "" {
		fmt.Fprintf(&b, "# found by: %s\n", f.Command)
	}
	for _, n := range f.Notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	if f.A.Results != nil || f.B.Results != nil {
		b.WriteString("#\n")
		b.WriteString(SideBySide(sc.Ops(), f.A, f.B, "# "))
	}
	b.WriteString(ops.Format(sc))
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

// Write stores a finding under dir/<subsystem>/ in a file named after the
// script's content, so the same script is stored once. It returns the path.
func Write(dir string, sc *ops.Script, f Finding) (string, error) {
	path := PathOf(dir, sc)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	if err := os.WriteFile(path, []byte(Render(sc, f)), 0o644); err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	return path, nil
}

// PathOf is where Write stores a script: dir/<subsystem>/<hash of its
// canonical text>.ops.
func PathOf(dir string, sc *ops.Script) string {
	sub := sc.Subsystem
	if sub == "" {
		sub = "misc"
	}
	sum := sha256.Sum256([]byte(ops.Format(sc)))
	return filepath.Join(dir, sub, hex.EncodeToString(sum[:6])+Ext)
}

// Read parses one script file.
func Read(path string) (*ops.Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ops.Parse(path, f)
}

// Files lists every script file under dir, sorted.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, Ext) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
