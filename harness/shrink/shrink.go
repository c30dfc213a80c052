// Package shrink minimizes a failing script: it removes chunks of operations
// (delta debugging from large chunks to single operations), then simplifies
// what is left operation by operation, and finally renumbers handles. The
// oracle judges many candidates per call, so a plugin pays one round trip per
// batch of candidates, not per candidate. The result depends only on the
// script and the oracle: the same failure always shrinks to the same script.
package shrink

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Oracle reports, for each candidate, whether it still fails.
type Oracle func(ctx context.Context, candidates [][]ops.Op) ([]bool, error)

// batch is how many candidates go to the oracle at once.
const batch = 48

// Minimize returns the smallest failing script it finds, starting from
// script, which must fail. It stops early, returning the best so far, when
// ctx ends.
func Minimize(ctx context.Context, script []ops.Op, oracle Oracle) ([]ops.Op, error) {
	cur := script
	for changed := true; changed; {
		changed = false
		var err error
		for k := max(len(cur)/2, 1); k >= 1; {
			next, ok, e := firstFailing(ctx, oracle, removals(cur, k))
			if e != nil {
				err = e
				break
			}
			if ok {
				cur, changed = next, true
				k = min(k, max(len(cur)/2, 1))
				continue
			}
			k /= 2
		}
		if err != nil {
			return Renumber(cur), err
		}
		for {
			next, ok, e := firstFailing(ctx, oracle, simplifications(cur))
			if e != nil {
				return Renumber(cur), e
			}
			if !ok {
				break
			}
			cur, changed = next, true
		}
	}
	final := Renumber(cur)
	if fails, err := oracle(ctx, [][]ops.Op{final}); err == nil && len(fails) == 1 && fails[0] {
		return final, nil
	}
	return cur, nil
}

// firstFailing runs candidates through the oracle in batches and returns the
// first one (in order) that fails.
func firstFailing(ctx context.Context, oracle Oracle, cands [][]ops.Op) ([]ops.Op, bool, error) {
	for start := 0; start < len(cands); start += batch {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("shrinking stopped: %w", err)
		}
		end := min(start+batch, len(cands))
		fails, err := oracle(ctx, cands[start:end])
		if err != nil {
			return nil, false, fmt.Errorf("shrinking: %w", err)
		}
		for i, f := range fails {
			if f {
				return cands[start+i], true, nil
			}
		}
	}
	return nil, false, nil
}

// removals lists the script with each chunk of k operations removed.
func removals(s []ops.Op, k int) [][]ops.Op {
	var out [][]ops.Op
	for i := 0; i < len(s); i += k {
		end := min(i+k, len(s))
		if end-i == len(s) {
			continue // never the empty script
		}
		c := make([]ops.Op, 0, len(s)-(end-i))
		c = append(c, s[:i]...)
		out = append(out, append(c, s[end:]...))
	}
	return out
}

// simplifications lists the script with one operation made plainer.
func simplifications(s []ops.Op) [][]ops.Op {
	var out [][]ops.Op
	with := func(i int, op ops.Op) {
		c := append([]ops.Op(nil), s...)
		c[i] = op
		out = append(out, c)
	}
	for i, op := range s {
		if op.As != 0 {
			o := op
			o.As = 0
			with(i, o)
		}
		if op.Kind == ops.KindGet {
			if op.Key != ops.IPCPrivate {
				o := op
				o.Key, o.Creat, o.Excl = ops.IPCPrivate, false, false
				with(i, o)
			}
			if op.Excl {
				o := op
				o.Excl = false
				with(i, o)
			}
			if op.Size > 1 {
				o := op
				o.Size = 1
				with(i, o)
			}
			if op.Mode != 0600 {
				o := op
				o.Mode = 0600
				with(i, o)
			}
			if op.Bind > 0 && !referenced(s, op.Bind) {
				o := op
				o.Bind = 0
				with(i, o)
			}
		}
	}
	return out
}

func referenced(s []ops.Op, h int) bool {
	for _, op := range s {
		if op.Obj.Handle == h {
			return true
		}
	}
	return false
}

// Renumber gives the handles that are bound the numbers 1, 2, ... in order of
// binding, drops bindings nothing refers to, and turns references to handles
// that are never bound into the id they resolve to (-1).
func Renumber(s []ops.Op) []ops.Op {
	used := map[int]bool{}
	for _, op := range s {
		if op.Obj.Handle > 0 {
			used[op.Obj.Handle] = true
		}
	}
	newNum := map[int]int{}
	out := make([]ops.Op, len(s))
	for i, op := range s {
		if op.Obj.Handle > 0 {
			if n, ok := newNum[op.Obj.Handle]; ok {
				op.Obj.Handle = n
			} else {
				op.Obj = ops.Ref{ID: -1}
			}
		}
		if op.Kind == ops.KindGet && op.Bind > 0 {
			if used[op.Bind] {
				n := len(newNum) + 1
				newNum[op.Bind] = n
				op.Bind = n
			} else {
				op.Bind = 0
			}
		}
		out[i] = op
	}
	return renumberAttachments(out)
}

// renumberAttachments gives the attachment handles that shmat binds the
// numbers 1, 2, ... in order of binding; a shmdt of a handle never bound (so
// far) gets a number no shmat binds, which detaches nothing, as before.
func renumberAttachments(s []ops.Op) []ops.Op {
	binds := 0
	for _, op := range s {
		if op.Kind == ops.KindShmat && op.Att > 0 {
			binds++
		}
	}
	newNum := map[int]int{}
	unbound := map[int]int{}
	next := 0
	for i, op := range s {
		switch {
		case op.Kind == ops.KindShmat && op.Att > 0:
			next++
			newNum[op.Att] = next
			s[i].Att = next
		case op.Kind == ops.KindShmdt && op.Att > 0:
			if n, ok := newNum[op.Att]; ok {
				s[i].Att = n
			} else {
				if _, ok := unbound[op.Att]; !ok {
					unbound[op.Att] = binds + len(unbound) + 1
				}
				s[i].Att = unbound[op.Att]
			}
		}
	}
	return s
}
