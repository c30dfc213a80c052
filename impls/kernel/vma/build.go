//go:build linux && amd64

package vma

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/cbuild"
)

//go:generate go test -run TestProtoHeader -update

//go:embed csrc
var helperSource embed.FS

// ErrNoCompiler is wrapped by the error of Build and Start when no C
// compiler is found.
var ErrNoCompiler = cbuild.ErrNoCompiler

// Build returns the path of the helper executable, compiling it into the
// cache directory if it is not there yet (package cbuild).
func Build(ctx context.Context, opt Options) (string, error) {
	src, err := fs.Sub(helperSource, "csrc")
	if err != nil {
		return "", fmt.Errorf("vma helper: %w", err)
	}
	path, err := cbuild.Build(ctx, src, "vmahelper", cbuild.Options{CC: opt.CC, CacheDir: opt.CacheDir})
	if errors.Is(err, ErrNoCompiler) {
		return "", fmt.Errorf("vma helper: %w: install gcc to run VMA operations on the kernel", err)
	}
	if err != nil {
		return "", fmt.Errorf("vma helper: %w", err)
	}
	return path, nil
}
