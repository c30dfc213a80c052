package cover

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Run is the kernel's coverage of one comparison: the KCOV side's image,
// the lines of a patch to report on, and the PCs the sides reached.
type Run struct {
	dir, patch string
	col        Collector
	im         *Image
	lines      []FileLine
}

// ImageOf is the vmlinux of the last of the sides named that is a
// kernel:image=VMLINUX, or "" when none is.
func ImageOf(sides ...string) string {
	vmlinux := ""
	for _, n := range sides {
		if _, cfg, err := ops.ParseImplName(n); err == nil && cfg.Options["image"] != "" {
			vmlinux = cfg.Options["image"]
		}
	}
	return vmlinux
}

// Start opens vmlinux (which must have KCOV and line tables) and reads the
// unified diff patch ("" for none) for a coverage report written to dir.
func Start(dir, vmlinux, patch string) (*Run, error) {
	r := &Run{dir: dir, patch: patch}
	var err error
	if r.im, err = Open(vmlinux, nil); err != nil {
		return nil, fmt.Errorf("--cover: %w", err)
	}
	if patch != "" {
		f, err := os.Open(patch)
		if err != nil {
			return nil, fmt.Errorf("--patch: %w", err)
		}
		defer f.Close()
		if r.lines, err = ParsePatch(f); err != nil {
			return nil, fmt.Errorf("--patch %s: %w", patch, err)
		}
	}
	return r, nil
}

// Observe gathers the coverage of both sides' outcomes of a script (the
// runner's Pair.Observed).
func (r *Run) Observe(a, b []ops.Outcome) {
	r.col.Outcomes(a)
	r.col.Outcomes(b)
}

// Write maps what was gathered onto the image, writes the report into the
// directory and prints its summary to out.
func (r *Run) Write(out io.Writer) error {
	observed, covered := r.col.Ops()
	rep := r.im.Cover(r.col.PCs())
	var patch *PatchReport
	if r.patch != "" {
		p := rep.Patch(r.lines)
		patch = &p
	}
	if err := rep.WriteDir(r.dir, patch); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%d of %d ops traced); report %s\n", rep.Summary(), covered, observed, filepath.Join(r.dir, "index.html"))
	if patch != nil {
		fmt.Fprintf(out, "%s; never reached: %s\n", patch.Summary(), filepath.Join(r.dir, "patch.txt"))
	}
	return nil
}
