package sides

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// RunReproIn runs the reproducer src in a guest of the kernel side spec
// names (RunRepro) and ends as the program did in the guest:
// nil for 0, exit 1 for 1 (a result differs), exit 2 for 2 (it could not
// set up); a guest that did not run it to its end, or a program killed by
// a signal, is exit 3, so that `git bisect run` can tell a failed boot
// from a verdict. keep, when not "", keeps the C source there.
func RunReproIn(ctx context.Context, spec string, src []byte, keep string, stdout, stderr io.Writer) error {
	name, cfg, err := ops.ParseImplName(spec)
	if err != nil {
		return cli.Usagef("--run %s: %v", spec, err)
	}
	if name != "kernel" {
		return cli.Usagef("--run %s: a reproducer runs on a kernel side: kernel:image=PATH, kernel:source=DIR or kernel:base=V", spec)
	}
	if cfg.Options[impls.OptionImage] == "" && cfg.Options[impls.OptionSource] == "" && cfg.Options[impls.OptionBase] == "" && cfg.Options[impls.OptionPatches] == "" {
		return cli.Usagef("--run %s: name the kernel to boot (image=, source= or base=): the reproducer runs on this machine's kernel without --run", spec)
	}
	image, err := VMImage(ctx, spec, cfg, stderr)
	if err != nil {
		return ExitError(err)
	}
	if keep != "" {
		if err := corpus.WriteFileAtomic(keep, src, 0o644); err != nil {
			return fmt.Errorf("repro: %w", err)
		}
	}
	code, err := RunRepro(ctx, image, src, stdout)
	var ge *GuestError
	switch {
	case errors.As(err, &ge):
		return cli.InfrastructureError{Msg: fmt.Sprintf("repro --run %s: %v", spec, ge.Err)}
	case err != nil:
		return err
	}
	switch code {
	case 0:
		fmt.Fprintf(stderr, "ipcfuzz: repro --run %s: every checked result as expected (exit 0)\n", spec)
		return nil
	case 1:
		return cli.Foundf("repro --run %s: a result differs from the expected one (the program exited 1)", spec)
	case 2:
		return fmt.Errorf("repro --run %s: the program could not set up in the guest (exit 2)", spec)
	default:
		return cli.InfrastructureError{Msg: fmt.Sprintf("repro --run %s: the program ended with status %d in the guest (a signal: 128+N)", spec, code)}
	}
}
