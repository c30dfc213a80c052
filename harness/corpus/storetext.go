package corpus

import (
	"fmt"
	"os"
	"path/filepath"
)

// StoreText writes a finding that is not a script (a performance finding,
// a pattern) as dir/sub/base+ext and returns its path, as Store writes a
// script: whole or not at all, never replacing a file (a second record of
// the same name gets "-2", "-3", ...).
func StoreText(dir, sub, base, ext, text string) (string, error) {
	subdir := filepath.Join(dir, sub)
	if err := os.MkdirAll(subdir, 0o755); err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	if base == "" || base != filepath.Base(base) || base[0] == '.' {
		return "", fmt.Errorf("corpus: %q is not a file name", base)
	}
	for n := 1; n <= 1000; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		path := filepath.Join(subdir, name+ext)
		created, err := createAtomic(path, []byte(text), 0o644)
		if err != nil {
			return "", fmt.Errorf("corpus: %w", err)
		}
		if created {
			return path, nil
		}
	}
	return "", fmt.Errorf("corpus: %s: a thousand findings of that name already", filepath.Join(subdir, base+ext))
}

// Slug keeps a part of a file name to letters, digits and ".=,+-" (other
// bytes turned into '_'), 48 bytes at most.
func Slug(s string) string { return slug(s) }

// SideSlug names a side in a file name as BaseName does: a built-in as
// given, a plugin path by its base name and a hash of the whole path.
func SideSlug(spec string) string { return sideSlug(spec) }
