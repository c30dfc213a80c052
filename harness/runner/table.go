package runner

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// maxTableRows bounds the rows a long script's table shows; the steps with
// problems beyond them are counted, not shown.
const maxTableRows = 2000

// piece is a run of steps with both sides' results, as the table keeper
// sees a chunk.
type piece struct {
	start  int
	ops    []ops.Op
	ra, rb []ops.Result
}

// rowRef is one step of a piece.
type rowRef struct {
	p *piece
	i int
}

// shownRow is one row of a long script's table, already written out.
type shownRow struct {
	step       int // 0-based
	ra, rb, op string
}

// tableKeeper keeps what the side-by-side table of a replay needs: every
// step while the script is at most full steps long (the table is then the
// whole script, as corpus.SideBySide writes it), and beyond that only the
// steps with problems and context steps around each, written out as they
// pass. It never holds more than a few chunks.
type tableKeeper struct {
	full, context int
	n             int
	// The whole script while n <= full; nil beyond.
	ops    []ops.Op
	ra, rb []ops.Result
	// The last context steps, oldest first from pos.
	ring []rowRef
	pos  int
	// The rows written out, the last step shown (-1: none), the last step
	// a problem asks to show, and the problems left out.
	shown   []shownRow
	last    int
	until   int
	omitted int
}

func newTableKeeper(full, context int) *tableKeeper {
	return &tableKeeper{full: full, context: context, last: -1, until: -1}
}

// add takes the next chunk's steps with both sides' results; marked[i]
// says step i of the chunk has a problem.
func (t *tableKeeper) add(c *chunk, ra, rb []ops.Result, marked []bool) {
	if t.n+len(c.ops) <= t.full {
		t.ops = append(t.ops, c.ops...)
		t.ra = append(t.ra, ra...)
		t.rb = append(t.rb, rb...)
	} else {
		t.ops, t.ra, t.rb = nil, nil, nil
	}
	p := &piece{start: c.start, ops: c.ops, ra: ra, rb: rb}
	for i := range c.ops {
		step := c.start + i
		switch {
		case marked[i] && len(t.shown) >= maxTableRows:
			t.omitted++
		case marked[i]:
			t.showRing()
			t.show(rowRef{p, i})
			t.until = step + t.context
		case step <= t.until && len(t.shown) < maxTableRows:
			t.show(rowRef{p, i})
		}
		t.push(rowRef{p, i})
	}
	t.n += len(c.ops)
}

// push remembers a step as one of the last context steps.
func (t *tableKeeper) push(r rowRef) {
	if t.context == 0 {
		return
	}
	if len(t.ring) < t.context {
		t.ring = append(t.ring, r)
		return
	}
	t.ring[t.pos] = r
	t.pos = (t.pos + 1) % t.context
}

// showRing shows the last context steps not shown yet, oldest first.
func (t *tableKeeper) showRing() {
	for k := range t.ring {
		t.show(t.ring[(t.pos+k)%len(t.ring)])
	}
}

func (t *tableKeeper) show(r rowRef) {
	step := r.p.start + r.i
	if step <= t.last {
		return
	}
	op := r.p.ops[r.i]
	t.shown = append(t.shown, shownRow{step: step, ra: ops.FormatResult(op, r.p.ra[r.i]), rb: ops.FormatResult(op, r.p.rb[r.i]), op: ops.FormatOp(op)})
	t.last = step
}

// table writes the table: the whole script's when it was short enough,
// else the rows kept, with the final steps when finalProblem (the final
// states differ).
func (t *tableKeeper) table(a, b string, finalProblem bool) string {
	if t.n <= t.full {
		return corpus.SideBySide(t.ops, corpus.Side{Name: a, Results: t.ra}, corpus.Side{Name: b, Results: t.rb}, "  ")
	}
	if finalProblem && len(t.shown) < maxTableRows {
		t.showRing()
	}
	const prefix = "  "
	width := len(a)
	for _, r := range t.shown {
		width = max(width, len(r.ra))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%4s  %-*s  %s\n", prefix, "step", width, "A: "+a, "B: "+b)
	gap := func(from, to int) { // 0-based, inclusive
		switch {
		case from == to:
			fmt.Fprintf(&sb, "%s%4s  (step %d not shown)\n", prefix, "...", from+1)
		case from < to:
			fmt.Fprintf(&sb, "%s%4s  (steps %d-%d not shown)\n", prefix, "...", from+1, to+1)
		}
	}
	next := 0
	for _, r := range t.shown {
		gap(next, r.step-1)
		mark := " "
		if r.ra != r.rb {
			mark = "*"
		}
		fmt.Fprintf(&sb, "%s%3d%s  %-*s  %-*s  %s\n", prefix, r.step+1, mark, width, r.ra, width, r.rb, r.op)
		next = r.step + 1
	}
	gap(next, t.n-1)
	if t.omitted > 0 {
		fmt.Fprintf(&sb, "%s%4s  (%d more steps with problems are not shown)\n", prefix, "...", t.omitted)
	}
	return sb.String()
}
