//go:build linux && amd64

package vma

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed csrc/vmahelper.c
var helperSource []byte

// ErrNoCompiler is wrapped by the error of Build and Start when no C
// compiler is found.
var ErrNoCompiler = errors.New("no C compiler")

// cflags build a static executable with no libc: no builtins or loop
// patterns that would call memset, no stack protector, not position
// independent (so that the kernel puts the heap after the bss, with the
// randomization gap).
func cflags() []string {
	return []string{
		"-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
		"-fno-tree-loop-distribute-patterns", "-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie",
		"-Wall", "-Wl,--build-id=none",
	}
}

// Build returns the path of the helper executable, compiling it into the
// cache directory if it is not there yet.
func Build(ctx context.Context, opt Options) (string, error) {
	sum := sha256.Sum256(append(append([]byte(nil), helperSource...), strings.Join(cflags(), " ")...))
	dir, err := cacheDir(opt)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "vmahelper-"+hex.EncodeToString(sum[:8]))
	if fi, err := os.Stat(path); err == nil && fi.Mode()&0o100 != 0 {
		return path, nil
	}
	cc, err := findCompiler(opt)
	if err != nil {
		return "", err
	}
	if err := compile(ctx, cc, dir, path); err != nil {
		return "", err
	}
	return path, nil
}

func cacheDir(opt Options) (string, error) {
	dir := opt.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "ipcfuzz")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vma helper: cache directory: %w", err)
	}
	return dir, nil
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
	return "", fmt.Errorf("vma helper: %w (looked for $CC, cc and gcc): install gcc to run VMA operations on the kernel", ErrNoCompiler)
}

// compile builds the helper into path, through a temporary file renamed
// into place so that concurrent builds never see half a binary.
func compile(ctx context.Context, cc, dir, path string) error {
	src, err := os.CreateTemp(dir, "vmahelper-*.c")
	if err != nil {
		return fmt.Errorf("vma helper: %w", err)
	}
	defer os.Remove(src.Name())
	if _, err := src.Write(helperSource); err != nil {
		src.Close()
		return fmt.Errorf("vma helper: writing the source: %w", err)
	}
	if err := src.Close(); err != nil {
		return fmt.Errorf("vma helper: writing the source: %w", err)
	}
	tmp := src.Name() + ".bin"
	defer os.Remove(tmp)
	args := append(cflags(), "-o", tmp, src.Name())
	out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("vma helper: %s failed: %v: %s", cc, err, firstLine(out))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("vma helper: %w", err)
	}
	return nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}
