package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// buildFlags are the compiler flags the reproducer's header says it is
// built with ("cc -O2 -static -o repro repro.c": IPC scripts are static;
// a VMA script's is not, since a static glibc puts its TLS on the heap the
// script uses).
func buildFlags(src []byte) []string {
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if rest, ok := strings.CutPrefix(line, "cc "); ok {
			if i := strings.Index(rest, " -o repro repro.c"); i >= 0 {
				return strings.Fields(rest[:i])
			}
		}
	}
	return []string{"-O2", "-static"}
}

// reproRunTimeout bounds one guest's boot and run of a reproducer: a
// reproducer's script is small, but a guest under TCG boots in seconds
// and runs ten times slower than the host.
const reproRunTimeout = 10 * time.Minute

// runReproInGuest builds the reproducer src (statically, with the C compiler of
// this machine), boots the kernel side spec names with it as the guest's
// only work, and ends as the program did in the guest: nil for 0, exit 1
// for 1 (a result differs), exit 2 for 2 (it could not set up); a guest
// that did not run it to its end, or a program killed by a signal, is
// exit 3, so that `git bisect run` can tell a failed boot from a verdict.
// keep, when not "", keeps the C source there.
func runReproInGuest(ctx context.Context, spec string, src []byte, keep string, stdout, stderr io.Writer) error {
	name, cfg, err := ops.ParseImplName(spec)
	if err != nil {
		return usageError{fmt.Sprintf("--run %s: %v", spec, err)}
	}
	if name != "kernel" {
		return usageError{fmt.Sprintf("--run %s: a reproducer runs on a kernel side: kernel:image=PATH, kernel:source=DIR or kernel:base=V", spec)}
	}
	if cfg.Options[impls.OptionImage] == "" && cfg.Options[impls.OptionSource] == "" && cfg.Options[impls.OptionBase] == "" && cfg.Options[impls.OptionPatches] == "" {
		return usageError{fmt.Sprintf("--run %s: name the kernel to boot (image=, source= or base=): the reproducer runs on this machine's kernel without --run", spec)}
	}
	image, err := sides.VMImage(ctx, spec, cfg, stderr)
	if err != nil {
		return cliError(err)
	}
	dir, err := os.MkdirTemp("", "ipcfuzz-repro-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfile, prog := filepath.Join(dir, "repro.c"), filepath.Join(dir, "repro")
	if keep != "" {
		if err := corpus.WriteFileAtomic(keep, src, 0o644); err != nil {
			return fmt.Errorf("repro: %w", err)
		}
	}
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		return err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	flags := buildFlags(src)
	if out, err := exec.CommandContext(ctx, cc, append(flags, "-o", prog, cfile)...).CombinedOutput(); err != nil {
		return fmt.Errorf("repro --run: %s %s: %v: %s (Debian: apt-get install gcc libc6-dev)", cc, strings.Join(flags, " "), err, firstLine(string(out)))
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("repro --run: finding this executable for the guest's /init: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, reproRunTimeout)
	defer cancel()
	code, err := impls.RunVM(rctx, impls.VMSpec{Image: image, Init: self, Console: stdout}, prog)
	if err != nil {
		return infrastructureError{fmt.Sprintf("repro --run %s: %v", spec, err)}
	}
	switch code {
	case 0:
		fmt.Fprintf(stderr, "ipcfuzz: repro --run %s: every checked result as expected (exit 0)\n", spec)
		return nil
	case 1:
		return foundError{fmt.Sprintf("repro --run %s: a result differs from the expected one (the program exited 1)", spec)}
	case 2:
		return fmt.Errorf("repro --run %s: the program could not set up in the guest (exit 2)", spec)
	default:
		return infrastructureError{fmt.Sprintf("repro --run %s: the program ended with status %d in the guest (a signal: 128+N)", spec, code)}
	}
}
