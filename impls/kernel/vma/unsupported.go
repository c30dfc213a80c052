//go:build !(linux && amd64)

package vma

import (
	"context"
	"fmt"
	"runtime"
)

// Start fails: the helper is x86-64 Linux code.
func Start(context.Context, Options) (*Helper, error) {
	return nil, fmt.Errorf("vma kernel helper: not supported on %s/%s (needs linux/amd64)", runtime.GOOS, runtime.GOARCH)
}

// Helper is not available on this platform.
type Helper struct{}
