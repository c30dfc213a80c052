package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// stateCmd runs a script on one implementation and prints it with every
// result stated ("-> ..."): how a corpus seed gets its expectations, from
// the kernel, before a person checks them. Its comments and blank lines
// are kept where they were. A long script is streamed: read, run and
// written a chunk at a time.
func stateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("state", flag.ContinueOnError)
	impl := fs.String("impl", "kernel", "the implementation whose results are stated")
	var sf sideFlags
	sf.notes = stderr
	sf.register(fs, 60*time.Second)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"state needs one script file"}
	}
	sub, err := checkScript(files[0])
	if err != nil {
		return inputError{err}
	}
	s, info, err := sf.open(context.WithoutCancel(ctx), *impl)
	if err != nil {
		return err
	}
	defer s.Impl.Close()
	if !slices.Contains(info.Subsystems, sub) {
		return inputError{fmt.Errorf("%s does not run subsystem %s (it runs %s)", s.Name, sub, strings.Join(info.Subsystems, ", "))}
	}
	f, err := os.Open(files[0])
	if err != nil {
		return inputError{err}
	}
	defer f.Close()
	text, err := os.Open(files[0])
	if err != nil {
		return inputError{err}
	}
	defer text.Close()
	// The script is read, run and written out a chunk at a time; the
	// subsystem line waits for the first results, so that nothing is
	// written when the script cannot run.
	out := bufio.NewWriter(stdout)
	lines := newCommentCopier(text, out, sub)
	_, err = runner.RunSteps(ctx, ops.NewScriptReader(files[0], f), s, 0, func(st ops.Step, r ops.Result) error {
		if err := lines.upToOperation(); err != nil {
			return err
		}
		r.Alternatives = 0
		st.Want = &r
		_, err := fmt.Fprintln(out, ops.FormatStep(st))
		return err
	})
	var pe *ops.ParseError
	switch {
	case errors.As(err, &pe):
		return inputError{err} // the file changed since it was checked
	case err != nil:
		return fmt.Errorf("%s: %w", *impl, err)
	}
	if err := lines.rest(); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}

// commentCopier copies what a script file holds besides its operations
// (comments, blank lines, the subsystem line) to the stated script, each
// where it was: before each operation's stated line, the lines that came
// before that operation in the file.
type commentCopier struct {
	in      *bufio.Scanner
	out     io.Writer
	sub     string
	started bool // the subsystem line is written
}

func newCommentCopier(r io.Reader, w io.Writer, sub string) *commentCopier {
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	return &commentCopier{in: in, out: w, sub: sub}
}

// upToOperation writes the lines before the next operation line of the
// file and skips that line (its stated form replaces it).
func (c *commentCopier) upToOperation() error {
	for c.in.Scan() {
		line := c.in.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "subsystem ") && !c.started:
			c.started = true
		default:
			return c.subsystem()
		}
		if _, err := fmt.Fprintln(c.out, line); err != nil {
			return err
		}
	}
	if err := c.in.Err(); err != nil {
		return fmt.Errorf("reading the script again: %w", err)
	}
	return c.subsystem()
}

// subsystem writes the subsystem line if the file had none before its
// first operation.
func (c *commentCopier) subsystem() error {
	if c.started {
		return nil
	}
	c.started = true
	_, err := fmt.Fprintf(c.out, "subsystem %s\n", c.sub)
	return err
}

// rest writes what follows the last operation (trailing comments).
func (c *commentCopier) rest() error {
	if !c.started {
		return nil // nothing ran: nothing is written
	}
	for c.in.Scan() {
		if _, err := fmt.Fprintln(c.out, c.in.Text()); err != nil {
			return err
		}
	}
	return c.in.Err()
}
