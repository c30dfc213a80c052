package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// tempPrefix starts the name of every temporary file a write makes beside
// its target: hidden, and never a script file (Files lists only *.ops).
const tempPrefix = ".ipcfuzz-tmp-"

// writeTemp writes data to a new temporary file in dir, synced to disk,
// and returns its path. The caller renames or links it into place, and
// removes it.
func writeTemp(dir string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, perm)
	}
	if werr != nil {
		os.Remove(tmp)
		return "", werr
	}
	return tmp, nil
}

// WriteFileAtomic replaces path with data as one step: the data goes to a
// temporary file beside it, which is then renamed over path. A write that
// fails or is killed half-way leaves the previous file whole (and at worst
// a hidden temporary file beside it).
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(filepath.Dir(path), data, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// createAtomic makes path hold data, as one step, only if path does not
// exist yet: the data goes to a temporary file, which is then hard-linked
// to path (link never replaces a file). It reports false, writing
// nothing, when path exists.
func createAtomic(path string, data []byte, perm fs.FileMode) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	tmp, err := writeTemp(filepath.Dir(path), data, perm)
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// CheckWritable says, before a run starts, whether files can be stored
// under dir: it makes (and removes) a small file in dir, or, when dir does
// not exist yet, in the nearest directory above it that does (dir is not
// created). A read-only or full file system fails here, not at the first
// finding.
func CheckWritable(dir string) error {
	probe := filepath.Clean(dir)
	for {
		fi, err := os.Stat(probe)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("findings directory %s: %s is not a directory", dir, probe)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("findings directory %s: %w", dir, err)
		}
		up := filepath.Dir(probe)
		if up == probe {
			return fmt.Errorf("findings directory %s: no directory above it exists", dir)
		}
		probe = up
	}
	tmp, err := writeTemp(probe, make([]byte, 4096), 0o600)
	if err != nil {
		return fmt.Errorf("findings directory %s cannot be written: %w", dir, err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("findings directory %s: %w", dir, err)
	}
	return nil
}
