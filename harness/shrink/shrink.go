// Package shrink minimizes a failing script: it removes chunks of operations
// (delta debugging from large chunks to single operations), then makes what
// is left plainer argument by argument (lower sizes, counts and ids, fewer
// flags, the main task's caller), and finally renumbers handles and tasks.
// It knows operations only through their ops.KindSpec, as syzkaller's
// minimizer knows calls only through their argument types. The oracle
// judges many candidates per call, so a plugin pays one round trip per batch
// of candidates, not per candidate. The result depends only on the script
// and the oracle: the same failure always shrinks to the same script.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Oracle reports, for each candidate, whether it still fails.
type Oracle func(ctx context.Context, candidates [][]ops.Op) ([]bool, error)

// The oracle gets up to maxBatch candidates at once, fewer when candidates
// are slow (a script that churns millions of objects): about batchTime's
// worth, so that candidates after the first failing one cost little. The
// candidate returned is always the first failing one in order, whatever
// the batch sizes, so the result stays deterministic.
const (
	maxBatch  = 48
	batchTime = 250 * time.Millisecond
)

// DefaultBudget is the work Minimize spends at most, in operations run
// (ops.Cost): about 30 candidates that churn four million objects each, or
// millions of plain operations. A budget counts work, not time, so that a
// shrink ends on the same script on every machine.
const DefaultBudget = 1 << 27

// ErrBudget is returned, with the best script so far, when shrinking ran out
// of its budget.
var ErrBudget = errors.New("shrinking stopped: its budget of work is spent")

// Minimize returns the smallest failing script it finds, starting from
// script, which must fail, spending at most DefaultBudget of work. It stops
// early, returning the best so far and an error, when ctx ends or the
// budget is spent.
func Minimize(ctx context.Context, script []ops.Op, oracle Oracle) ([]ops.Op, error) {
	return MinimizeWithin(ctx, script, oracle, DefaultBudget)
}

// MinimizeWithin is Minimize with a budget of work (0: none).
func MinimizeWithin(ctx context.Context, script []ops.Op, oracle Oracle, budget int64) ([]ops.Op, error) {
	s := &search{oracle: oracle, budget: budget}
	cur := script
	for changed := true; changed; {
		changed = false
		for k := max(len(cur)/2, 1); k >= 1; {
			next, ok, err := s.firstFailing(ctx, removals(cur, k))
			if err != nil {
				return finish(ctx, cur, oracle), err
			}
			if ok {
				cur, changed = next, true
				k = min(k, max(len(cur)/2, 1))
				continue
			}
			k /= 2
		}
		for {
			next, ok, err := s.firstFailing(ctx, simplifications(cur))
			if err != nil {
				return finish(ctx, cur, oracle), err
			}
			if !ok {
				break
			}
			cur, changed = next, true
		}
	}
	return finish(ctx, cur, oracle), nil
}

// finish renumbers the script if the renumbered one still fails.
func finish(ctx context.Context, cur []ops.Op, oracle Oracle) []ops.Op {
	final := Renumber(cur)
	if fails, err := oracle(ctx, [][]ops.Op{final}); err == nil && len(fails) == 1 && fails[0] {
		return final
	}
	return cur
}

// search is one minimization: its oracle and the work it has left.
type search struct {
	oracle        Oracle
	budget, spent int64
}

// firstFailing runs candidates through the oracle in batches and returns the
// first one (in order) that fails.
func (s *search) firstFailing(ctx context.Context, cands [][]ops.Op) ([]ops.Op, bool, error) {
	n := maxBatch
	for start := 0; start < len(cands); {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("shrinking stopped: %w", err)
		}
		end := min(start+n, len(cands))
		for _, c := range cands[start:end] {
			s.spent += ops.Cost(c)
		}
		if s.budget > 0 && s.spent > s.budget {
			return nil, false, ErrBudget
		}
		began := time.Now()
		fails, err := s.oracle(ctx, cands[start:end])
		if err != nil {
			return nil, false, fmt.Errorf("shrinking: %w", err)
		}
		for i, f := range fails {
			if f {
				return cands[start+i], true, nil
			}
		}
		per := time.Since(began) / time.Duration(end-start)
		n = maxBatch
		if per > 0 {
			n = min(max(int(batchTime/per), 1), maxBatch)
		}
		start = end
	}
	return nil, false, nil
}

// removals lists the script with each chunk of k operations removed, leaving
// out candidates that would use an attachment or file handle no operation
// binds any more (object handles resolve to the id -1, an id like any other).
func removals(s []ops.Op, k int) [][]ops.Op {
	var out [][]ops.Op
	for i := 0; i < len(s); i += k {
		end := min(i+k, len(s))
		if end-i == len(s) {
			continue // never the empty script
		}
		c := make([]ops.Op, 0, len(s)-(end-i))
		c = append(c, s[:i]...)
		c = append(c, s[end:]...)
		if boundBeforeUse(c) {
			out = append(out, c)
		}
	}
	return out
}

// boundBeforeUse reports whether every handle of a class other than objects
// is bound before it is used.
func boundBeforeUse(s []ops.Op) bool {
	bound := map[ops.Class]map[int]bool{}
	ok := true
	for _, op := range s {
		ops.UsedHandles(op, func(c ops.Class, n int) {
			if c != ops.ClassObject && !bound[c][n] {
				ok = false
			}
		})
		if spec := ops.Spec(op.Kind); op.Bind > 0 && spec != nil {
			if bound[spec.Binds] == nil {
				bound[spec.Binds] = map[int]bool{}
			}
			bound[spec.Binds][op.Bind] = true
		}
	}
	return ok
}

// simplifications lists the script with one operation made plainer: an
// argument lowered toward its plainest value, the caller made root, or a
// handle binding nothing uses dropped; or with an object handle bound by
// an earlier operation instead (which may leave the later one removable).
func simplifications(s []ops.Op) [][]ops.Op {
	out := append(earlierBindings(s), joinedMaps(s)...)
	used := usedObjects(s)
	for i, op := range s {
		var cands []ops.Op
		if op.As != 0 {
			o := op
			o.As = 0
			cands = append(cands, o)
		}
		if spec := ops.Spec(op.Kind); op.Bind > 0 && spec != nil && spec.Binds == ops.ClassObject && !used[op.Bind] {
			o := op
			o.Bind = 0
			cands = append(cands, o)
		}
		cands = append(cands, ops.Plainer(op)...)
		for _, o := range cands {
			if ops.Validate(o) != nil {
				continue
			}
			c := append([]ops.Op(nil), s...)
			c[i] = o
			out = append(out, c)
		}
	}
	return out
}

// joinedMaps lists the script with two consecutive mmaps made one where
// the second maps, with the same arguments, the pages right after the
// first's (and, for a file, the file pages right after): a layout a run
// of neighbours built, made by one call.
func joinedMaps(s []ops.Op) [][]ops.Op {
	var out [][]ops.Op
	for i := 0; i+1 < len(s); i++ {
		a, b := s[i], s[i+1]
		if a.Kind != ops.KindMap || b.Kind != ops.KindMap || a.Task != b.Task || a.As != b.As {
			continue
		}
		joined := a
		joined.VMA.Pages += b.VMA.Pages
		next := b
		next.VMA.Start, next.VMA.Pages, next.VMA.Offset = a.VMA.Start, joined.VMA.Pages, a.VMA.Offset
		if next != joined || b.VMA.Start != a.VMA.Start+a.VMA.Pages || (a.VMA.File != 0 && b.VMA.Offset != a.VMA.Offset+a.VMA.Pages) ||
			ops.Validate(joined) != nil {
			continue
		}
		c := append(append(append([]ops.Op(nil), s[:i]...), joined), s[i+2:]...)
		out = append(out, c)
	}
	return out
}

// earlierBindings lists the script with the binding of an object handle
// moved to an earlier operation of the same type that binds nothing: a
// later get whose object only stands for an id the earlier one already
// gave can then go.
func earlierBindings(s []ops.Op) [][]ops.Op {
	var out [][]ops.Op
	bindsObject := func(op ops.Op) bool {
		spec := ops.Spec(op.Kind)
		return spec != nil && spec.Binds == ops.ClassObject
	}
	for j, later := range s {
		if later.Bind == 0 || !bindsObject(later) {
			continue
		}
		for i, earlier := range s[:j] {
			if earlier.Bind != 0 || !bindsObject(earlier) || earlier.Type != later.Type {
				continue
			}
			c := append([]ops.Op(nil), s...)
			c[i].Bind, c[j].Bind = later.Bind, 0
			out = append(out, c)
		}
	}
	return out
}

func usedObjects(s []ops.Op) map[int]bool {
	used := map[int]bool{}
	for _, op := range s {
		ops.UsedHandles(op, func(c ops.Class, n int) {
			if c == ops.ClassObject {
				used[n] = true
			}
		})
	}
	return used
}

// Renumber gives the handles of each class that are bound the numbers 1, 2,
// ... in order of binding, drops object bindings nothing refers to, turns
// references to object handles that are never bound into the id they
// resolve to (-1), and gives the tasks other than t0 the numbers 1, 2, ...
// in order of first use.
func Renumber(s []ops.Op) []ops.Op {
	used := usedObjects(s)
	newNum := map[ops.Class]map[int]int{}
	tasks := map[uint8]uint8{0: 0}
	out := make([]ops.Op, len(s))
	for i, op := range s {
		op = ops.RenumberHandles(op, func(c ops.Class, n int) int {
			if m, ok := newNum[c][n]; ok {
				return m
			}
			return 0 // never bound: an object reference becomes id=-1
		})
		if spec := ops.Spec(op.Kind); op.Bind > 0 && spec != nil {
			c := spec.Binds
			if c == ops.ClassObject && !used[op.Bind] {
				op.Bind = 0
			} else {
				if newNum[c] == nil {
					newNum[c] = map[int]int{}
				}
				n := len(newNum[c]) + 1
				newNum[c][op.Bind] = n
				op.Bind = n
			}
		}
		if _, ok := tasks[op.Task]; !ok {
			tasks[op.Task] = uint8(len(tasks))
		}
		op.Task = tasks[op.Task]
		out[i] = op
	}
	return out
}
