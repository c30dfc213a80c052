package main

import (
	"io"

	"github.com/ipcfuzz/ipcfuzz/harness/cover"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// coverFlags are --cover DIR and --patch FILE: the kernel's coverage of a
// run, from the KCOV side (a kernel:image= of ci/kernel.sh --cover).
type coverFlags struct {
	dir, patch string
	run        *cover.Run // prepare
}

// flags are the rows of --cover and --patch.
func (c *coverFlags) flags() []cli.Flag {
	return []cli.Flag{
		cli.Opt("cover", nil, "write the kernel's coverage of ipc/ and the VMA code into this directory (coverage.txt, index.html): needs a kernel:image= side built with ci/kernel.sh --cover", &c.dir),
		cli.Opt("patch", nil, "with --cover: report the lines this unified diff adds or changes, reached or not (patch.txt)", &c.patch),
	}
}

// attach gathers the coverage of p's sides (which runner.Options.Observe
// asks them for).
func (c *coverFlags) attach(p *runner.Pair) {
	if c.run != nil {
		p.Observed = c.run.Observe
	}
}

// prepare checks the flags against the sides named before anything runs:
// one is a kernel:image= whose vmlinux has KCOV and line tables, and the
// patch reads.
func (c *coverFlags) prepare(names ...string) error {
	if c.dir == "" {
		if c.patch != "" {
			return cli.UsageError{Msg: "--patch needs --cover DIR"}
		}
		return nil
	}
	vmlinux := cover.ImageOf(names...)
	if vmlinux == "" {
		return cli.UsageError{Msg: "--cover: no side is a kernel:image=VMLINUX (built with ci/kernel.sh --cover)"}
	}
	var err error
	if c.run, err = cover.Start(c.dir, vmlinux, c.patch); err != nil {
		return cli.InputError{Err: err}
	}
	return nil
}

// write writes the report and prints its summary: on stdout beside a text
// output, else on stderr.
func (c *coverFlags) write(format string, stdout, stderr io.Writer) error {
	if c.run == nil {
		return nil
	}
	if format != "text" {
		stdout = stderr
	}
	return c.run.Write(stdout)
}
