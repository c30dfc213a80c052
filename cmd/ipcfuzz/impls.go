package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/host"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// openSide starts the implementation spec names: a built-in served by this
// binary, or an executable given by path. inProcess runs a built-in inside
// this process instead (for debugging and speed comparisons).
func openSide(ctx context.Context, spec string, inProcess bool, callTimeout time.Duration) (runner.Side, error) {
	side, err := startSide(ctx, spec, inProcess, callTimeout)
	if err != nil || side.Impl == nil {
		return side, err
	}
	info, err := side.Impl.Info(ctx)
	if err != nil {
		side.Impl.Close()
		return side, fmt.Errorf("%s: %w", spec, err)
	}
	side.Follows = info.Follows
	return side, nil
}

func startSide(ctx context.Context, spec string, inProcess bool, callTimeout time.Duration) (runner.Side, error) {
	name, cfg, err := ops.ParseImplName(spec)
	if err != nil {
		return runner.Side{}, usageError{err.Error()}
	}
	side := runner.Side{Name: spec, Config: cfg}
	if isPath(name) {
		path, err := filepath.Abs(name)
		if err != nil {
			return side, fmt.Errorf("plugin %q: %w", name, err)
		}
		if _, err := os.Stat(path); err != nil {
			return side, fmt.Errorf("plugin %q: %w", name, err)
		}
		p, err := host.Open(ctx, host.Launch{Name: spec, Path: path, CallTimeout: callTimeout})
		if err != nil {
			return side, err
		}
		side.Impl = p
		return side, nil
	}
	b, err := impls.Lookup(name)
	if err != nil {
		return side, usageError{err.Error()}
	}
	if inProcess {
		m, err := b.New()
		if err != nil {
			return side, fmt.Errorf("%s: %w", name, err)
		}
		side.Impl = ops.NewLocal(b.Info, m)
		return side, nil
	}
	self, err := os.Executable()
	if err != nil {
		return side, fmt.Errorf("finding this executable to serve %s: %w", name, err)
	}
	p, err := host.Open(ctx, host.Launch{Name: spec, Path: self, Args: []string{"plugin", "serve", name}, CallTimeout: callTimeout})
	if err != nil {
		return side, err
	}
	side.Impl = p
	return side, nil
}

func isPath(name string) bool {
	return strings.ContainsRune(name, '/')
}
