package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// sideFlags are the flags every command that opens implementations takes.
type sideFlags struct {
	callTimeout time.Duration
	inProcess   bool
}

func (f *sideFlags) register(fs *flag.FlagSet, timeout time.Duration) {
	fs.DurationVar(&f.callTimeout, "call-timeout", timeout, "deadline of one plugin call")
	fs.BoolVar(&f.inProcess, "in-process", false, "run built-in implementations inside this process")
}

// open starts the implementation spec names: a built-in served by this
// binary (or inside this process with --in-process), or an executable given
// by path. It reads the implementation's Info.
func (f *sideFlags) open(ctx context.Context, spec string) (runner.Side, ops.Info, error) {
	side, err := f.start(ctx, spec)
	if err != nil {
		return side, ops.Info{}, err
	}
	info, err := side.Impl.Info(ctx)
	if err != nil {
		side.Impl.Close()
		return side, info, fmt.Errorf("%s: %w", spec, err)
	}
	side.Follows = info.Follows
	return side, info, nil
}

func (f *sideFlags) start(ctx context.Context, spec string) (runner.Side, error) {
	name, cfg, err := ops.ParseImplName(spec)
	if err != nil {
		return runner.Side{}, usageError{err.Error()}
	}
	side := runner.Side{Name: spec, Config: cfg}
	if strings.ContainsRune(name, '/') {
		path, err := filepath.Abs(name)
		if err != nil {
			return side, fmt.Errorf("plugin %q: %w", name, err)
		}
		if _, err := os.Stat(path); err != nil {
			return side, fmt.Errorf("plugin %q: %w", name, err)
		}
		p, err := host.Open(ctx, host.Launch{Name: spec, Path: path, CallTimeout: f.callTimeout})
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
	if f.inProcess {
		m, err := b.New()
		if err != nil {
			return side, fmt.Errorf("%s: %w", name, err)
		}
		side.Impl = ops.NewLocal(impls.InfoOf(b, m), m)
		return side, nil
	}
	self, err := os.Executable()
	if err != nil {
		return side, fmt.Errorf("finding this executable to serve %s: %w", name, err)
	}
	p, err := host.Open(ctx, host.Launch{Name: spec, Path: self, Args: []string{"plugin", "serve", name}, CallTimeout: f.callTimeout})
	if err != nil {
		return side, err
	}
	side.Impl = p
	return side, nil
}
