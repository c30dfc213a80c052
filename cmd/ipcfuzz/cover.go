package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ipcfuzz/ipcfuzz/harness/cover"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// coverFlags are --cover DIR and --patch FILE: the kernel's coverage of a
// run, from the KCOV side (a kernel:image= of ci/kernel.sh --cover).
type coverFlags struct {
	dir, patch string
	col        cover.Collector
	im         *cover.Image // the KCOV side's vmlinux (prepare)
	lines      []cover.FileLine
}

func (c *coverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "cover", "", "write the kernel's coverage of ipc/ and the VMA code into this directory (coverage.txt, index.html): needs a kernel:image= side built with ci/kernel.sh --cover")
	fs.StringVar(&c.patch, "patch", "", "with --cover: report the lines this unified diff adds or changes, reached or not (patch.txt)")
}

// attach gathers the coverage of p's sides (which runner.Options.Observe
// asks them for).
func (c *coverFlags) attach(p *runner.Pair) {
	if c.dir == "" {
		return
	}
	p.Observed = func(a, b []ops.Outcome) {
		c.col.Outcomes(a)
		c.col.Outcomes(b)
	}
}

// prepare checks the flags against the sides named before anything runs:
// one is a kernel:image= whose vmlinux has KCOV and line tables, and the
// patch reads.
func (c *coverFlags) prepare(names ...string) error {
	if c.dir == "" {
		if c.patch != "" {
			return usageError{"--patch needs --cover DIR"}
		}
		return nil
	}
	vmlinux := ""
	for _, n := range names {
		if _, cfg, err := ops.ParseImplName(n); err == nil && cfg.Options["image"] != "" {
			vmlinux = cfg.Options["image"]
		}
	}
	if vmlinux == "" {
		return usageError{"--cover: no side is a kernel:image=VMLINUX (built with ci/kernel.sh --cover)"}
	}
	var err error
	if c.im, err = cover.Open(vmlinux, nil); err != nil {
		return inputError{fmt.Errorf("--cover: %w", err)}
	}
	if c.patch != "" {
		f, err := os.Open(c.patch)
		if err != nil {
			return inputError{fmt.Errorf("--patch: %w", err)}
		}
		defer f.Close()
		if c.lines, err = cover.ParsePatch(f); err != nil {
			return inputError{fmt.Errorf("--patch %s: %w", c.patch, err)}
		}
	}
	return nil
}

// write maps what was gathered onto the image, writes the report and
// prints its summary.
func (c *coverFlags) write(out io.Writer) error {
	if c.dir == "" {
		return nil
	}
	observed, covered := c.col.Ops()
	r := c.im.Cover(c.col.PCs())
	var patch *cover.PatchReport
	if c.patch != "" {
		p := r.Patch(c.lines)
		patch = &p
	}
	if err := r.WriteDir(c.dir, patch); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%d of %d ops traced); report %s\n", r.Summary(), covered, observed, filepath.Join(c.dir, "index.html"))
	if patch != nil {
		fmt.Fprintf(out, "%s; never reached: %s\n", patch.Summary(), filepath.Join(c.dir, "patch.txt"))
	}
	return nil
}
