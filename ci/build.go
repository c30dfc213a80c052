// Package ci holds what the ipcfuzz binary shares with the scripts of
// this folder: the guest kernel build of kernel.sh and its configuration
// fragment, embedded, so that kernel:source=DIR builds a developer's tree
// the same way ci/kernel.sh does, from any working directory.
package ci

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed kernel.sh
var kernelScript []byte

//go:embed kernels/ipcfuzz-guest.config
var guestConfig []byte

//go:embed kernels/ipcfuzz-cover.config
var coverConfig []byte

// Build says what BuildKernel builds.
type Build struct {
	// Source is a kernel source tree, or "" for Debian's linux-source of
	// Base.
	Source string
	// Base is Debian's source version when Source is "": "6.1" or "6.12"
	// ("": 6.1, or what Patches' base file says).
	Base string
	// Patches is a directory of *.patch files applied in name order ("":
	// none).
	Patches string
	// Cache is the build cache ("": kernel.sh's default).
	Cache string
	// Cover builds with KCOV and line tables (kernel.sh --cover).
	Cover bool
	// Log receives the build's messages ("": discarded).
	Log io.Writer
}

// BuildKernel builds the guest kernel b names with kernel.sh (cached:
// a build made before returns at once) and returns its vmlinux's path.
// A source that is no kernel tree, or patches that are no directory, is
// refused before anything runs.
func BuildKernel(ctx context.Context, b Build) (string, error) {
	args := []string{}
	if b.Source != "" {
		abs, err := filepath.Abs(b.Source)
		if err != nil {
			return "", err
		}
		if err := isKernelTree(abs); err != nil {
			return "", err
		}
		args = append(args, "--source", abs)
	}
	if b.Base != "" {
		args = append(args, "--base", b.Base)
	}
	name := "stock"
	if b.Patches != "" {
		abs, err := filepath.Abs(b.Patches)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", fmt.Errorf("patches %s: not a directory of *.patch files", b.Patches)
		}
		args = append(args, "--patches", abs)
		name = filepath.Base(abs)
	}
	if b.Cache != "" {
		args = append(args, "--cache", b.Cache)
	}
	if b.Cover {
		args = append(args, "--cover")
	}
	dir, err := os.MkdirTemp("", "ipcfuzz-kbuild-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "kernel.sh")
	if err := os.MkdirAll(filepath.Join(dir, "kernels"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(script, kernelScript, 0o755); err != nil {
		return "", err
	}
	for file, text := range map[string][]byte{"ipcfuzz-guest.config": guestConfig, "ipcfuzz-cover.config": coverConfig} {
		if err := os.WriteFile(filepath.Join(dir, "kernels", file), text, 0o644); err != nil {
			return "", err
		}
	}
	log := b.Log
	if log == nil {
		log = io.Discard
	}
	var out, errs bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, append(args, name)...)...)
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(log, &tail{b: &errs, max: 4096})
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errs.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return "", fmt.Errorf("building the kernel (ci/kernel.sh %s): %w: %s", strings.Join(append(args, name), " "), err, msg)
	}
	vmlinux := strings.TrimSpace(out.String())
	if i := strings.LastIndexByte(vmlinux, '\n'); i >= 0 {
		vmlinux = vmlinux[i+1:]
	}
	if _, err := os.Stat(vmlinux); err != nil {
		return "", fmt.Errorf("building the kernel: no vmlinux where kernel.sh said: %w", err)
	}
	return vmlinux, nil
}

// isKernelTree says why dir is not a kernel source tree, or nil.
func isKernelTree(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("kernel source %s: %w", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("kernel source %s: not a directory", dir)
	}
	for _, p := range []string{"Makefile", "ipc", "mm", "arch/x86"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("kernel source %s: not a kernel source tree (no %s)", dir, p)
		}
	}
	return nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	b   *bytes.Buffer
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}
