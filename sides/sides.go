// Package sides opens the implementations a comparison runs, the one way
// every command and test does it: a built-in name with options
// ("naive:alloc=legacy") served as a plugin process of the ipcfuzz binary,
// or inside this process; "plugin:NAME", a built-in always served as a
// plugin process; or the path of any plugin executable. It is the one
// place, with cmd/ipcfuzz, that assembles the house: it knows the
// built-ins (impls), the plugin host (plugins/host) and the comparison
// path (harness/runner).
package sides

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/ci"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// Options say how sides are opened.
type Options struct {
	// CallTimeout bounds every plugin call (host.Launch.CallTimeout).
	CallTimeout time.Duration
	// InProcess runs built-ins inside this process instead of as plugin
	// processes ("plugin:NAME" is a plugin process all the same).
	InProcess bool
	// Self is the ipcfuzz executable that serves built-ins as plugins
	// ("ipcfuzz plugin serve NAME"); empty: this executable.
	Self string
	// BuildLog receives the messages of a kernel build that a side's
	// source= or base= starts (nil: discarded).
	BuildLog io.Writer
	// Backends are the VM backends a kernel side's vm= chooses from, the
	// first the default (nil: impls.DefaultVMBackends, QEMU).
	Backends impls.VMBackends
}

// SpecError is a spec that names nothing openable: a malformed name or
// options, or no such built-in. It is the user's to fix.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// Open starts the implementation spec names and reads what it says of
// itself (Side.Info). The side is the caller's to close.
func Open(ctx context.Context, spec string, o Options) (runner.Side, error) {
	served, asPlugin := strings.CutPrefix(spec, "plugin:") // before the options' colon
	name, cfg, err := ops.ParseImplName(served)
	if err != nil {
		return runner.Side{}, &SpecError{err}
	}
	side := runner.Side{Name: spec, Config: cfg}
	switch {
	case name == "kernel" && !bootsVM(cfg) && cfg.Options[impls.OptionCPUs] != "":
		return side, &SpecError{fmt.Errorf("%s: cpus= sizes a guest: give it with image=, source= or base=", spec)}
	case name == "kernel" && bootsVM(cfg):
		side.Config = guestConfig(cfg)
		side.Impl, err = openVM(ctx, spec, cfg, o)
	case asPlugin:
		side.Impl, err = openServed(ctx, spec, name, o)
	case strings.ContainsRune(name, '/'):
		side.Impl, err = openPath(ctx, spec, name, o)
	case o.InProcess:
		side.Impl, err = openInProcess(name)
	default:
		side.Impl, err = openServed(ctx, spec, name, o)
	}
	if err != nil {
		return side, err
	}
	if side.Info, err = side.Impl.Info(ctx); err != nil {
		_ = side.Impl.Close()
		return side, fmt.Errorf("%s: %w", spec, err)
	}
	return side, nil
}

// OpenPair opens a and b and builds their pair for the subsystem's
// scripts compared under rel (runner.NewPair), and resets each side once
// with its configuration, so that options a side refuses are said before
// anything runs; close closes both.
func OpenPair(ctx context.Context, a, b, subsystem string, rel equiv.Relation, o Options) (p *runner.Pair, close func(), err error) {
	var opened []runner.Side
	close = func() {
		for _, s := range opened {
			_ = s.Impl.Close()
		}
	}
	for _, spec := range []string{a, b} {
		s, err := Open(ctx, spec, o)
		if err != nil {
			close()
			return nil, nil, err
		}
		opened = append(opened, s)
	}
	if p, err = runner.NewPair(ctx, opened[0], opened[1], subsystem, rel); err != nil {
		close()
		return nil, nil, err
	}
	// Two sides that cannot follow (a kernel against a kernel): the
	// optimized model judges which ways of a race are allowed, and whether
	// the machines' configurations explain a divergence.
	if !p.A.Follows && !p.B.Follows {
		j, err := openJudge(ctx, p)
		if err != nil {
			close()
			return nil, nil, err
		}
		opened = append(opened, *j)
		p.Judge = j
	}
	for _, s := range []runner.Side{p.A, p.B} {
		if err := s.Impl.Reset(ctx, s.Config); err != nil {
			close()
			return nil, nil, fmt.Errorf("%s refuses its configuration: %w", s.Name, err)
		}
	}
	return p, close, nil
}

// openJudge opens the optimized model in this process as the judge of p's
// races, configured with the facts of A (as a model compared with A).
func openJudge(ctx context.Context, p *runner.Pair) (*runner.Side, error) {
	j, err := Open(ctx, "optimized", Options{InProcess: true})
	if err != nil {
		return nil, err
	}
	j.Config.Facts = p.A.Info.Facts.Over(p.B.Info.Facts)
	if !j.Info.Follows {
		_ = j.Impl.Close()
		return nil, fmt.Errorf("the judge %s cannot follow", j.Name)
	}
	if err := j.Impl.Reset(ctx, j.Config); err != nil {
		_ = j.Impl.Close()
		return nil, fmt.Errorf("the judge %s: %w", j.Name, err)
	}
	return &j, nil
}

// openPath starts a plugin executable given by path.
func openPath(ctx context.Context, spec, path string, o Options) (ops.Impl, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", path, err)
	}
	return host.Open(ctx, host.Launch{Name: spec, Path: abs, CallTimeout: o.CallTimeout})
}

// openServed starts a built-in as a plugin process of the ipcfuzz binary.
func openServed(ctx context.Context, spec, name string, o Options) (ops.Impl, error) {
	if _, err := impls.Lookup(name); err != nil {
		return nil, &SpecError{err}
	}
	self := o.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this executable to serve %s: %w", name, err)
		}
	}
	return host.Open(ctx, host.Launch{Name: spec, Path: self, Args: []string{"plugin", "serve", name}, CallTimeout: o.CallTimeout})
}

// bootsVM says whether a kernel side's options name a kernel to boot in a
// guest: an image, or a tree or base to build, or a backend.
func bootsVM(cfg ops.Config) bool {
	for _, k := range impls.VMOptions() {
		if cfg.Options[k] != "" {
			return true
		}
	}
	return false
}

// guestConfig is what the kernel adapter in a guest is reset with: cfg
// without the options the boot takes (impls.VMOptions, and caps=, which
// the boot gives the guest's root): each fact is said once.
// guestCPUs is the vCPUs cpus= asks of the guest, 0 for the default; a
// value that is no number of 1 to impls.MaxGuestCPUs is a SpecError.
func guestCPUs(spec string, cfg ops.Config) (int, error) {
	v := cfg.Options[impls.OptionCPUs]
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > impls.MaxGuestCPUs {
		return 0, &SpecError{fmt.Errorf("%s: cpus=%s: the guest's vCPUs are a number of 1 to %d", spec, v, impls.MaxGuestCPUs)}
	}
	return n, nil
}

func guestConfig(cfg ops.Config) ops.Config {
	out := ops.Config{Options: map[string]string{}, Facts: cfg.Facts}
	for k, v := range cfg.Options {
		if k != ops.OptionCaps && k != impls.OptionCPUs && !slices.Contains(impls.VMOptions(), k) {
			out.Options[k] = v
		}
	}
	return out
}

// VMImage is the kernel a kernel side's options name to boot: image=PATH
// as given, or source=DIR / base=V with patches=DIR built first
// (ci.BuildKernel: cached, its messages to log). An image that cannot be
// read, a source that is no kernel tree, or both an image and a source, is
// a SpecError.
func VMImage(ctx context.Context, spec string, cfg ops.Config, log io.Writer) (string, error) {
	image, source, base, patches := cfg.Options[impls.OptionImage], cfg.Options[impls.OptionSource], cfg.Options[impls.OptionBase], cfg.Options[impls.OptionPatches]
	if image != "" && (source != "" || base != "" || patches != "") {
		return "", &SpecError{fmt.Errorf("%s: image= boots a kernel as it is: source=, base= and patches= build one; give one or the other", spec)}
	}
	if image == "" && source == "" && base == "" && patches == "" {
		return "", &SpecError{fmt.Errorf("%s: name the kernel to boot: image=PATH, source=DIR or base=V", spec)}
	}
	if source != "" && base != "" {
		return "", &SpecError{fmt.Errorf("%s: source= is a tree of its own: base= names Debian's source instead", spec)}
	}
	if image == "" {
		vmlinux, err := ci.BuildKernel(ctx, ci.Build{Source: source, Base: base, Patches: patches, Log: log})
		if err != nil {
			return "", &SpecError{fmt.Errorf("%s: %w", spec, err)}
		}
		return vmlinux, nil
	}
	abs, err := filepath.Abs(image)
	if err != nil {
		return "", &SpecError{fmt.Errorf("%s: %w", spec, err)}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", &SpecError{fmt.Errorf("%s: kernel image: %w", spec, err)}
	}
	if st.IsDir() || st.Size() == 0 {
		return "", &SpecError{fmt.Errorf("%s: kernel image %s: not a kernel (a directory or an empty file)", spec, image)}
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", &SpecError{fmt.Errorf("%s: kernel image: %w", spec, err)}
	}
	f.Close()
	return abs, nil
}

// openVM starts the kernel side in a guest booted from the image its
// options name (VMImage) by the backend vm= names (Options.Backends),
// reached by the plugin host without a relay. The guest's /init is the
// ipcfuzz executable (Options.Self or this one).
func openVM(ctx context.Context, spec string, cfg ops.Config, o Options) (ops.Impl, error) {
	backends := o.Backends
	if backends == nil {
		backends = impls.DefaultVMBackends()
	}
	backend, err := backends.Lookup(cfg.Options[impls.OptionVM])
	if err != nil {
		return nil, &SpecError{fmt.Errorf("%s: %w", spec, err)}
	}
	cpus, err := guestCPUs(spec, cfg)
	if err != nil {
		return nil, err
	}
	caps := cfg.Options[ops.OptionCaps]
	if caps != "" {
		if _, err := (ops.OptionSpecs{ops.CapsOption}).Parse(map[string]string{ops.OptionCaps: caps}); err != nil {
			return nil, &SpecError{fmt.Errorf("%s: %w", spec, err)}
		}
	}
	image, err := VMImage(ctx, spec, cfg, o.BuildLog)
	if err != nil {
		return nil, err
	}
	self := o.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this executable to boot %s: %w", spec, err)
		}
	}
	boot := func(ctx context.Context, console io.Writer, env []string) (host.Booted, error) {
		g, err := backend.Boot(ctx, impls.VMSpec{Image: image, Init: self, Env: env, Caps: caps, Console: console, CPUs: cpus})
		if err != nil {
			return nil, err
		}
		return g, nil
	}
	return host.Open(ctx, host.Launch{Name: spec, Path: image, Boot: boot, CallTimeout: o.CallTimeout})
}

// openInProcess starts a built-in inside this process.
func openInProcess(name string) (ops.Impl, error) {
	b, err := impls.Lookup(name)
	if err != nil {
		return nil, &SpecError{err}
	}
	m, info, err := b.Start()
	if err != nil {
		return nil, err
	}
	return ops.NewLocal(info, m), nil
}

// Usable reports why the built-in called name cannot run subsystem here
// (it cannot start, or a part it needs did not), or nil when it can. It
// starts the built-in in this process and closes it again.
func Usable(name, subsystem string) error {
	b, err := impls.Lookup(name)
	if err != nil {
		return err
	}
	m, info, err := b.Start()
	if err != nil {
		return err
	}
	defer m.Close()
	if !slices.Contains(info.Subsystems, subsystem) {
		err := error(&runner.NotRunError{Side: name, Subsystem: subsystem, Runs: info.Subsystems})
		if notes := strings.Join(info.Notes, "; "); notes != "" {
			err = fmt.Errorf("%w: %s", err, notes)
		}
		return err
	}
	return nil
}

// IsSpecError reports whether err is the user's spec naming nothing.
func IsSpecError(err error) bool {
	var se *SpecError
	return errors.As(err, &se)
}
