package cover

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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

// Within is whether a program counter is one of the instrumented blocks
// of the covered files in the KCOV image among the sides named, for a
// guided run to follow only those (nil where no side is such an image, or
// it cannot be read: every program counter then counts).
func Within(sides ...string) func(pc uint64) bool {
	vmlinux := ImageOf(sides...)
	if vmlinux == "" {
		return nil
	}
	im, err := Open(vmlinux, nil)
	if err != nil {
		return nil
	}
	return func(pc uint64) bool { _, ok := im.byRet[pc]; return ok }
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
	pcs := r.col.PCs()
	if err := WritePCs(filepath.Join(r.dir, PCsFile), pcs); err != nil {
		return err
	}
	rep := r.im.Cover(pcs)
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

// PCsFile is the file of a report's directory that holds every program
// counter the run reported: one per line, in hex, sorted, each once, a
// form other coverage tools read too; Image.Cover of ReadPCs makes the
// report again (against another unreached.tsv, another patch) without
// the run.
const PCsFile = "pcs.txt"

// WritePCs writes pcs (repeats allowed) to path as PCsFile holds them.
func WritePCs(path string, pcs []uint64) error {
	u := slices.Clone(pcs)
	slices.Sort(u)
	u = slices.Compact(u)
	var b strings.Builder
	for _, pc := range u {
		fmt.Fprintf(&b, "%#x\n", pc)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	return nil
}

// ReadPCs reads a file WritePCs wrote.
func ReadPCs(path string) ([]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cover: %w", err)
	}
	var pcs []uint64
	for i, l := range strings.Fields(string(data)) {
		pc, err := strconv.ParseUint(strings.TrimPrefix(l, "0x"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("cover: %s:%d: %q is not a program counter in hex", path, i+1, l)
		}
		pcs = append(pcs, pc)
	}
	return pcs, nil
}
