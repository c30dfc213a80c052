// Package corpus reads and writes the committed scripts under corpus/ and
// the findings of runs: seeds, every minimized divergence and every plugin
// failure ever found. A file is a script in canonical text form; a
// finding's has a comment header that says how, where and when it was
// found, states one side's results in its body and the other's where they
// differ (Finding describes the format; ReadFinding and Render read and
// write it). Every file is written whole or not at all (Store,
// WriteFileAtomic), and a finding never replaces another's file.
package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Ext is the extension of script files.
const Ext = ".ops"

// PathOf is where a merge stores a script in a corpus: dir/<subsystem>/<hash of its
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
