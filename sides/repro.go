package sides

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/impls"
)

// ReproTimeout bounds one guest's boot and run of a reproducer: a
// reproducer's script is small, but a guest under TCG boots in seconds
// and runs ten times slower than the host.
const ReproTimeout = 10 * time.Minute

// GuestError is a guest that did not run a program to its end (it did not
// boot, or did not answer): the machine's trouble, no verdict.
type GuestError struct{ Err error }

func (e *GuestError) Error() string { return e.Err.Error() }
func (e *GuestError) Unwrap() error { return e.Err }

// RunRepro builds the C reproducer src with this machine's C compiler ($CC,
// else cc) and the flags its header names, boots the kernel image with it
// as the guest's only work (this executable as the guest's /init) and
// returns the program's exit status in the guest, within ReproTimeout. A
// guest that did not run it to its end is a *GuestError.
func RunRepro(ctx context.Context, image string, src []byte, console io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "ipcfuzz-repro-run-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfile, prog := filepath.Join(dir, "repro.c"), filepath.Join(dir, "repro")
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		return 0, err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	flags := buildFlags(src)
	if out, err := exec.CommandContext(ctx, cc, append(flags, "-o", prog, cfile)...).CombinedOutput(); err != nil {
		line, _, _ := strings.Cut(string(out), "\n")
		return 0, fmt.Errorf("repro --run: %s %s: %v: %s (Debian: apt-get install gcc libc6-dev)", cc, strings.Join(flags, " "), err, line)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("repro --run: finding this executable for the guest's /init: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, ReproTimeout)
	defer cancel()
	code, err := impls.RunVM(rctx, impls.VMSpec{Image: image, Init: self, Console: console}, prog)
	if err != nil {
		return 0, &GuestError{err}
	}
	return code, nil
}

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
