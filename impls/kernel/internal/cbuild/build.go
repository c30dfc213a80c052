package cbuild

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

//go:embed freestanding.h
var freestanding []byte

// Runtime is the name of the shared header a program includes.
const Runtime = "freestanding.h"

// ErrNoCompiler is wrapped by the error of Build when no C compiler is
// found.
var ErrNoCompiler = errors.New("no C compiler")

// Options configure Build. The zero value is the defaults.
type Options struct {
	// CC is the C compiler to try first.
	CC string
	// CacheDir is where programs are built; default
	// os.UserCacheDir()/ipcfuzz.
	CacheDir string
}

// flags build a static executable with no libc: no builtins or loop
// patterns that would call memset or memcpy behind the code's back, no
// stack protector, not position independent (so that the kernel puts the
// heap after the bss, with the randomization gap), every warning an error.
func flags() []string {
	return []string{
		"-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
		"-fno-tree-loop-distribute-patterns", "-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie",
		"-Wall", "-Werror", "-Wl,--build-id=none",
	}
}

// Build returns the path of the program name, compiling it into the cache
// directory if it is not there yet: name.c of src, with every header of
// src and freestanding.h beside it.
func Build(ctx context.Context, src fs.FS, name string, opt Options) (string, error) {
	files, err := sources(src, name)
	if err != nil {
		return "", err
	}
	dir, err := cacheDir(opt)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"-"+hash(files))
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&0o100 != 0 {
		if err := private(path, fi); err != nil {
			return "", err
		}
		return path, nil
	}
	cc, err := findCompiler(opt)
	if err != nil {
		return "", err
	}
	if err := compile(ctx, cc, files, name, path); err != nil {
		return "", err
	}
	return path, nil
}

// sources reads name.c and the headers of src, and adds freestanding.h.
func sources(src fs.FS, name string) (map[string][]byte, error) {
	files := map[string][]byte{Runtime: freestanding}
	headers, err := fs.Glob(src, "*.h")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range append(headers, name+".c") {
		b, err := fs.ReadFile(src, f)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the source: %w", name, err)
		}
		files[f] = b
	}
	return files, nil
}

// hash names a build: the flags, then every file's name and text.
func hash(files map[string][]byte) string {
	h := sha256.New()
	h.Write([]byte(strings.Join(flags(), " ")))
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// cacheDir is the directory programs are built in: Options.CacheDir, or
// the user's cache directory, or (without one: no HOME) a directory of
// this user's in the temp dir. The programs found there are run, by root
// too: a directory, or a program, that another user could have written is
// refused.
func cacheDir(opt Options) (string, error) {
	dir := opt.CacheDir
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "ipcfuzz")
		} else {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("ipcfuzz-cache-%d", os.Getuid()))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	if err := private(dir, fi); err != nil {
		return "", err
	}
	return dir, nil
}

// private refuses a file of the cache that is not this user's, or that
// others may write: the programs built there are run.
func private(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("cache: %s is a symbolic link: refusing to run what it holds", path)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("cache: %s belongs to uid %d, not to this user (%d): refusing to run what it holds", path, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("cache: others may write %s (mode %04o): refusing to run what it holds", path, fi.Mode().Perm())
	}
	return nil
}

// findCompiler looks for Options.CC, $CC, cc and gcc, in that order.
func findCompiler(opt Options) (string, error) {
	for _, c := range []string{opt.CC, os.Getenv("CC"), "cc", "gcc"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (looked for $CC, cc and gcc)", ErrNoCompiler)
}

// compile builds the program into path, in a temporary directory beside it
// whose executable is renamed into place, so that concurrent builds never
// see half a binary.
func compile(ctx context.Context, cc string, files map[string][]byte, name, path string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(path), name+"-build-*")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return fmt.Errorf("%s: writing the source: %w", name, err)
		}
	}
	bin := filepath.Join(tmp, name)
	args := append(flags(), "-o", bin, filepath.Join(tmp, name+".c"))
	if out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("compiling %s with %s: %v: %.200s", name, cc, err, firstError(out))
	}
	if err := os.Rename(bin, path); err != nil {
		return fmt.Errorf("%s: installing the executable: %w", name, err)
	}
	return nil
}

// firstError is the compiler's first line that says "error", else its
// first line.
func firstError(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		if strings.Contains(l, "error") {
			return strings.TrimSpace(l)
		}
	}
	return lines[0]
}
