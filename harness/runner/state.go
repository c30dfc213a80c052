package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// WriteStated runs the script file path on side s and writes it to w with
// every result stated ("-> ..."): how a corpus seed gets its expectations,
// from the kernel, before a person checks them. Its comments and blank
// lines are kept where they were, and sub is its subsystem line when it
// has none. A long script is streamed: read, run and written a chunk at a
// time (RunSteps); nothing is written when it cannot run. An error of the
// file (opening it, *ops.ParseError) is returned as it is, one of the side
// with its name.
func WriteStated(ctx context.Context, path, sub string, s Side, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	text, err := os.Open(path)
	if err != nil {
		return err
	}
	defer text.Close()
	// The subsystem line waits for the first results, so that nothing is
	// written when the script cannot run.
	out := bufio.NewWriter(w)
	lines := newCommentCopier(text, out, sub)
	_, err = RunSteps(ctx, ops.NewScriptReader(path, f), s, 0, func(st ops.Step, r ops.Result) error {
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
		return err
	case err != nil:
		return fmt.Errorf("%s: %w", s.Name, err)
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
